# kruise-rs image: the manager and the node daemon from one multi-stage build (one image, as
# upstream's: the chart runs /kruise-manager in the manager Deployment and /kruise-daemon in
# the daemon DaemonSet).
#
#   docker build -t ghcr.io/kruise-rs/kruise-manager:0.1.0 .
#
# The chart's manager.image.repository and tag point at this image. The binaries run as the
# distroless nonroot user (65532), and the chart mounts the root filesystem read-only.

# No protoc: kruise-cri's CRI code is generated and checked in.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p kruise-manager -p kruise-daemon \
    && install -D target/release/kruise-manager /out/kruise-manager \
    && install -D target/release/kruise-daemon /out/kruise-daemon

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/kruise-manager /kruise-manager
COPY --from=build /out/kruise-daemon /kruise-daemon
USER 65532:65532
ENTRYPOINT ["/kruise-manager"]
CMD ["run"]
