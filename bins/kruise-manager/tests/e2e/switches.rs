//! Switches that cannot do what upstream's do yet are refused by name: at start for a gate
//! named on, and at admission for the objects of a feature that is off.

use std::process::Command;

use crate::common::Playground;

/// `kruise-manager run` with `args`: its exit status and stderr. It must fail before it
/// reaches the API server (the kubeconfig names none).
fn run_manager(args: &[&str]) -> (bool, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\n").expect("kubeconfig");
    let out = Command::new(env!("CARGO_BIN_EXE_kruise-manager"))
        .arg("run")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(args)
        .output()
        .expect("kruise-manager runs");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_gate_whose_feature_is_not_built_is_refused_at_start_by_name() {
    for (gate, why) in [
        ("PodProbeMarkerGate", "PodProbeMarker and NodePodProbe are not built yet"),
        ("EnablePodProbeMarkerOnServerless", "PodProbeMarker is not built yet"),
        ("CloneSetEventHandlerOptimization", "filter of pod updates is not built"),
    ] {
        let (ok, stderr) = run_manager(&["--feature-gates", &format!("{gate}=true")]);
        assert!(!ok, "{gate}=true was accepted");
        assert!(
            stderr.contains(&format!("feature gate {gate} cannot be turned on"))
                && stderr.contains(why),
            "{stderr}"
        );
    }
}

#[test]
fn probe_markers_are_refused_as_with_the_gate_off() {
    let pg = Playground::start(1, &[]);
    let marker = r#"
apiVersion: apps.kruise.io/v1alpha1
kind: PodProbeMarker
metadata:
  name: ready-file
spec:
  selector:
    matchLabels: {app: web}
  probes:
  - name: ready
    containerName: main
    probe:
      exec:
        command: ["cat", "/tmp/ready"]
    markerPolicy:
    - state: Succeeded
      labels: {ready: "true"}
"#;
    let refused = pg.kubectl.run_with(&["apply", "-f", "-"], Some(marker));
    assert!(!refused.ok);
    assert!(
        refused.stderr.contains("feature-gate PodProbeMarkerGate is not enabled"),
        "{}",
        refused.stderr
    );
    // The start log says why the gate on by default upstream is off here.
    assert!(pg.log().contains("PodProbeMarkerGate"), "{}", pg.log());
}
