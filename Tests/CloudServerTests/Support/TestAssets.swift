import Foundation

/// Where store tests keep assets: a fresh temporary folder, or a fresh prefix in the `STADIUMCLOUD_TEST_ASSETS` bucket.
enum TestAssets {
    static func location() -> String {
        let unique = "stadiumcloud-assets-" + UUID().uuidString
        guard let bucket = ProcessInfo.processInfo.environment["STADIUMCLOUD_TEST_ASSETS"], !bucket.isEmpty else {
            return NSTemporaryDirectory() + unique
        }
        let parts = bucket.split(separator: "?", maxSplits: 1)
        return parts[0] + "/" + unique + (parts.count > 1 ? "?" + parts[1] : "")
    }

    static func remove(_ location: String) {
        if !location.hasPrefix("s3://") { try? FileManager.default.removeItem(atPath: location) }
    }
}
