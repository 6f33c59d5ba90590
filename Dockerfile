# kruise-rs images: the manager (and, once built, the daemon) from one multi-stage build.
#
#   docker build -t ghcr.io/kruise-rs/kruise-manager:0.1.0 .
#
# The chart's manager.image.repository and tag point at this image. The binaries run as the
# distroless nonroot user (65532), and the chart mounts the root filesystem read-only.

FROM rust:1.95-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends protobuf-compiler \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p kruise-manager \
    && install -D target/release/kruise-manager /out/kruise-manager

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/kruise-manager /kruise-manager
USER 65532:65532
ENTRYPOINT ["/kruise-manager"]
CMD ["run"]
