@testable import CloudAssets
import CloudCore
import Foundation
import Logging
import Testing

/// Signature V4 against AWS's published examples: the signature test suite's `get-vanilla`, and the S3 guide's
/// GET with a range, bucket listing and pre-signed URL (all checked with botocore as well).
@Suite struct SignatureV4Tests {
    static let s3 = SignatureV4(
        credentials: AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1")
    static let may24 = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z

    static func authorization(_ headers: [(String, String)]) -> String? { headers.first { $0.0 == "authorization" }?.1 }

    @Test func getVanilla() {
        let signer = SignatureV4(
            credentials: AWSCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            region: "us-east-1", service: "service")
        let headers = signer.sign(
            method: "GET", path: "/", headers: [("Host", "example.amazonaws.com")], payloadHash: SignatureV4.emptyPayloadHash,
            date: Date(timeIntervalSince1970: 1_440_938_160))  // 2015-08-30T12:36:00Z
        #expect(headers.first { $0.0 == "x-amz-date" }?.1 == "20150830T123600Z")
        #expect(
            Self.authorization(headers)
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        )
    }

    @Test func s3GetObjectWithARange() {
        let headers = Self.s3.sign(
            method: "GET", path: "/test.txt",
            headers: [("host", "examplebucket.s3.amazonaws.com"), ("range", "bytes=0-9"), ("x-amz-content-sha256", SignatureV4.emptyPayloadHash)],
            payloadHash: SignatureV4.emptyPayloadHash, date: Self.may24)
        #expect(
            Self.authorization(headers)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        )
    }

    @Test func s3ListObjectsSortsTheQuery() {
        let headers = Self.s3.sign(
            method: "GET", path: "/", query: [("prefix", "J"), ("max-keys", "2")],
            headers: [("host", "examplebucket.s3.amazonaws.com"), ("x-amz-content-sha256", SignatureV4.emptyPayloadHash)],
            payloadHash: SignatureV4.emptyPayloadHash, date: Self.may24)
        #expect(Self.authorization(headers)?.hasSuffix("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") == true)
    }

    @Test func s3PresignedURL() {
        let query = Self.s3.presignedQuery(
            method: "GET", host: "examplebucket.s3.amazonaws.com", path: "/test.txt", expires: 86_400, date: Self.may24)
        #expect(query.first { $0.0 == "X-Amz-Signature" }?.1 == "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
        #expect(query.first { $0.0 == "X-Amz-Credential" }?.1 == "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request")
    }

    @Test func s3LocationsAreReadWithClearErrors() throws {
        let location = try #require(
            try S3Location.parse("s3://photos/prod/assets?endpoint=http://127.0.0.1:9000/&region=eu-west-1", environment: [:]))
        #expect(
            location
                == S3Location(bucket: "photos", prefix: "prod/assets/", endpoint: "http://127.0.0.1:9000", region: "eu-west-1", partSize: 8 << 20))
        #expect(try S3Location.parse("s3://photos", environment: ["AWS_REGION": "ap-south-1"])?.endpoint == "https://s3.ap-south-1.amazonaws.com")
        #expect(try S3Location.parse("/var/lib/stadiumcloud/assets") == nil)
        for bad in ["s3://", "s3://b?endpoint=ftp://x", "s3://b?partSize=1024", "s3://b?acl=public"] {
            #expect(throws: CloudError.self, "\(bad)") { try S3Location.parse(bad, environment: [:]) }
        }
        #expect(throws: CloudError.self) { try openAssetStore("s3://photos", environment: [:], logger: .init(label: "test")) }
    }
}
