# Builds the server in the official Swift image and runs it in a slim one.
FROM swift:6.3-bookworm AS build
WORKDIR /build
COPY Package.swift ./
RUN swift package resolve
COPY Sources Sources
COPY Tests Tests
COPY bench bench
RUN swift build -c release --product stadiumcloud --static-swift-stdlib \
    && cp "$(swift build -c release --show-bin-path)/stadiumcloud" /build/stadiumcloud \
    && cp -R "$(swift build -c release --show-bin-path)/StadiumCloud_CloudHTTP.resources" /build/

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libcurl4 libxml2 tzdata \
    && rm -rf /var/lib/apt/lists/* && useradd --system --home /app stadiumcloud \
    && mkdir -p /data/assets && chown -R stadiumcloud /data
WORKDIR /app
COPY --from=build /build/stadiumcloud /app/stadiumcloud
# openapi.yaml, served at /openapi.yaml, is a resource bundle found next to the binary.
COPY --from=build /build/StadiumCloud_CloudHTTP.resources /app/StadiumCloud_CloudHTTP.resources
COPY migrations /app/migrations
COPY Resources /app/Resources
ENV STADIUMCLOUD_ASSETS=/data/assets
USER stadiumcloud
EXPOSE 8080
ENTRYPOINT ["/app/stadiumcloud"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080", "--migrate"]
