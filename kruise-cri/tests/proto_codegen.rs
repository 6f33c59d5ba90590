//! The CRI v1 code in `src/proto/runtime.v1.rs` is generated from `proto/api.proto` and checked in,
//! so that building kruise-cri needs no `protoc`. This test generates it again (with the protoc that
//! `protoc-bin-vendored` ships) and fails if the checked-in copy differs.
//!
//! After changing `proto/api.proto` or the prost/tonic versions, write the new code with
//! `KRUISE_CRI_REGENERATE=1 cargo test -p kruise-cri --test proto_codegen`.

use std::path::Path;

#[test]
fn checked_in_cri_code_is_what_the_proto_generates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().expect("a temporary directory");
    let protoc = protoc_bin_vendored::protoc_bin_path()
        .expect("protoc-bin-vendored ships a protoc for this platform");
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc);
    tonic_prost_build::configure()
        .out_dir(out.path())
        .emit_rerun_if_changed(false)
        .compile_with_config(config, &[root.join("proto/api.proto")], &[root.join("proto")])
        .expect("proto/api.proto compiles");
    let generated =
        std::fs::read_to_string(out.path().join("runtime.v1.rs")).expect("generated runtime.v1.rs");
    let checked_in_path = root.join("src/proto/runtime.v1.rs");
    if std::env::var_os("KRUISE_CRI_REGENERATE").is_some() {
        std::fs::write(&checked_in_path, &generated).expect("write src/proto/runtime.v1.rs");
        return;
    }
    let checked_in = std::fs::read_to_string(&checked_in_path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "src/proto/runtime.v1.rs is not what proto/api.proto generates ({} bytes checked in, {} generated); \
         run KRUISE_CRI_REGENERATE=1 cargo test -p kruise-cri --test proto_codegen",
        checked_in.len(),
        generated.len()
    );
}
