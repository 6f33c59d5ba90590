//! The `crds` subcommand, run as a user would.

use std::process::Command;

fn manager() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kruise-manager"))
}

#[test]
fn crds_prints_every_crd_as_yaml_documents() {
    let output = manager().arg("crds").output().expect("run kruise-manager crds");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let names: Vec<String> = serde_yaml::Deserializer::from_str(&text)
        .map(|doc| {
            let value = <serde_yaml::Value as serde::Deserialize>::deserialize(doc).expect("yaml");
            value["metadata"]["name"].as_str().expect("name").to_owned()
        })
        .collect();
    assert_eq!(names.len(), 18, "{names:?}");
    assert!(names.contains(&"clonesets.apps.kruise.io".to_owned()));
    assert!(names.contains(&"podunavailablebudgets.policy.kruise.io".to_owned()));
}

#[test]
fn crds_out_writes_upstream_file_names() {
    let dir = std::env::temp_dir().join(format!("kruise-crds-{}", std::process::id()));
    let output = manager().args(["crds", "--out"]).arg(&dir).output().expect("run");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("read out dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let upstream =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/upstream/crds");
    let mut expected: Vec<String> = std::fs::read_dir(upstream)
        .expect("read upstream crds")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    expected.sort();
    assert_eq!(files, expected);
    std::fs::remove_dir_all(&dir).expect("clean up");
}
