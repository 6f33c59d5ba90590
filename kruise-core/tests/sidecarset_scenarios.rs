//! Readable SidecarSet injection scenarios: each YAML file under
//! `tests/scenarios/sidecarset/` holds an injection input (the pod, the SidecarSets with their
//! revisions, the namespace's labels, the gates and `now`); the outcome is compared with an
//! insta snapshot next to it. One file per behaviour of the upstream manual.
//!
//! ```yaml
//! description: what the scenario shows (the upstream manual's behaviour)
//! input: { pod: ..., namespaceLabels: ..., sidecarSets: [{sidecarSet: ..., revisions: [...], draw: 0.5}], gates: ..., now: ... }
//! ```

mod support;

use std::path::Path;

use kruise_core::sidecarset::{InjectionInput, inject};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    description: String,
    input: InjectionInput,
}

/// What the snapshot shows: the injected pod and what was injected, or the refusal.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Outcome {
    Injected {
        changed: bool,
        matched: Vec<String>,
        injected: Vec<String>,
        pod: Box<k8s_openapi::api::core::v1::Pod>,
    },
    Refused(String),
}

fn run(path: &Path) {
    let text = std::fs::read_to_string(path).expect("read scenario");
    let scenario: Scenario =
        serde_yaml::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let first = inject(&scenario.input);
    // Determinism, and idempotence: injecting the injected pod again changes nothing.
    assert_eq!(first, inject(&scenario.input), "{}", path.display());
    let outcome = match first {
        Ok(out) => {
            let mut again = scenario.input.clone();
            again.pod = out.pod.clone();
            let twice = inject(&again).expect("injects again");
            assert!(!twice.changed, "{}: injecting twice changed the pod", path.display());
            Outcome::Injected {
                changed: out.changed,
                matched: out.matched,
                injected: out.injected,
                pod: Box::new(out.pod),
            }
        }
        Err(err) => Outcome::Refused(err.to_string()),
    };
    let name = path.file_stem().and_then(|s| s.to_str()).expect("file name").to_owned();
    insta::with_settings!({
        snapshot_path => "scenarios/sidecarset/snapshots",
        prepend_module_to_snapshot => false,
        description => scenario.description.trim(),
        omit_expression => true,
    }, {
        insta::assert_yaml_snapshot!(name, outcome);
    });
}

#[test]
fn sidecarset_scenarios() {
    for file in support::scenario_files("sidecarset") {
        run(&file);
    }
}
