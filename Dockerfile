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
# The `dist` profile (release with fat LTO and one codegen unit, see Cargo.toml) makes the
# binaries about 45% smaller; most of kruise-daemon's resident memory is its code. It builds
# slower (about 13 minutes for the daemon on 2 cores).
RUN cargo build --profile dist --locked -p kruise-manager -p kruise-daemon \
    && install -D target/dist/kruise-manager /out/kruise-manager \
    && install -D target/dist/kruise-daemon /out/kruise-daemon

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/kruise-manager /kruise-manager
COPY --from=build /out/kruise-daemon /kruise-daemon
USER 65532:65532
ENTRYPOINT ["/kruise-manager"]
CMD ["run"]
