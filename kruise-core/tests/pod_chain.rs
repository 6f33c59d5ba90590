//! The pod mutating webhook's chain with the kinds' steps in it: the SidecarSet step
//! ([`SidecarSetInjection`]) and the PodUnavailableBudget step ([`PubAnnotation`]). (The chain
//! itself is in the base layer and knows no step; these tests put the steps together as
//! kruise-kube does.)

use k8s_openapi::api::core::v1::Pod;
use kruise_api::well_known::annotations;
use kruise_core::admission::pod_chain::{PodChain, PodMutationError};
use kruise_core::pub_budget::PubAnnotation;
use kruise_core::sidecarset::{InjectionGates, SidecarSetCandidate, SidecarSetInjection};

/// Runs `chain` on a copy of `pod`: the pod after the chain, when its patch is not empty.
/// Checks that the patch turns the pod's JSON into the changed pod's.
fn run(chain: &PodChain<'_>, pod: &Pod) -> Result<Option<Pod>, PodMutationError> {
    let mut after = pod.clone();
    let patch = chain.run(&mut after)?.patch().expect("encodes");
    let mut doc = serde_json::to_value(pod).expect("json");
    if let Some(text) = &patch {
        let ops: json_patch::Patch = serde_json::from_slice(text).expect("a JSON patch");
        json_patch::patch(&mut doc, &ops).expect("applies");
    }
    assert_eq!(doc, serde_json::to_value(&after).expect("json"));
    Ok(patch.map(|_| after))
}

#[test]
fn the_sidecarset_step_injects_and_refuses_with_the_reason() {
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use kruise_api::apps::v1beta1::{SidecarContainer, SidecarSet, SidecarSetSpec};

    let set = |name: &str| SidecarSetCandidate {
        sidecar_set: std::sync::Arc::new(SidecarSet::new(
            name,
            SidecarSetSpec {
                selector: Some(LabelSelector {
                    match_labels: Some([("app".to_owned(), "web".to_owned())].into()),
                    ..Default::default()
                }),
                containers: vec![SidecarContainer {
                    container: Container {
                        name: "mesh".into(),
                        image: Some("mesh:1".into()),
                        ..Default::default()
                    },
                    ..Default::default()
                }],
                ..Default::default()
            },
        )),
        revisions: Vec::new(),
        draw: 0.0,
        selectors: None,
    };
    let mut pod = Pod::default();
    pod.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
    pod.spec = Some(PodSpec {
        containers: vec![Container { name: "app".into(), ..Default::default() }],
        ..Default::default()
    });
    let step = SidecarSetInjection {
        namespace_labels: None,
        sidecar_sets: vec![set("mesh-set")],
        gates: InjectionGates::default(),
        now: "2024-05-01T10:00:00Z".parse().expect("time"),
    };
    let pub_step = PubAnnotation { covering: Some("web-pub".into()), label: None };
    let chain = PodChain::new(vec![&pub_step, &step]);
    let out = run(&chain, &pod).expect("runs").expect("changed");
    let names: Vec<&str> =
        out.spec.as_ref().expect("spec").containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["mesh", "app"]);
    assert!(
        out.metadata
            .annotations
            .as_ref()
            .expect("notes")
            .contains_key(annotations::PUB_RELATED_PUB)
    );
    // Idempotent through the whole chain.
    assert!(run(&chain, &out).expect("runs").is_none());
    // Two SidecarSets injecting `mesh`: refused at the SidecarSet step.
    let clash = SidecarSetInjection { sidecar_sets: vec![set("a"), set("b")], ..step.clone() };
    let err = run(&PodChain::new(vec![&clash]), &pod).expect_err("refused");
    assert_eq!(
        err.to_string(),
        "SidecarSet: container mesh would be injected by both sidecarSet a and sidecarSet b"
    );
}

#[test]
fn the_pub_step_names_the_budget_and_labels_the_pod_once() {
    let step = PubAnnotation {
        covering: Some("web-pub".into()),
        label: Some(("pub.kruise.io/protected".into(), "true".into())),
    };
    let chain = PodChain::new(vec![&step]);
    let pod = run(&chain, &Pod::default()).expect("runs").expect("changed");
    let notes = pod.metadata.annotations.clone().expect("notes");
    assert_eq!(notes[annotations::PUB_RELATED_PUB], "web-pub");
    assert_eq!(notes[annotations::PUB_RELATED_PUB_LEGACY], "web-pub");
    assert_eq!(pod.metadata.labels.clone().expect("labels")["pub.kruise.io/protected"], "true");
    // Idempotent: a second run changes nothing.
    assert!(run(&chain, &pod).expect("runs").is_none());
    // No covering budget: nothing.
    let none = PubAnnotation { covering: None, label: None };
    assert!(run(&PodChain::new(vec![&none]), &Pod::default()).expect("runs").is_none());
}

mod stateless_steps {
    //! The cache-less steps (readiness gate, container launch priority, enhanced liveness)
    //! over generated pods: the patch applies, a refusal names a field, and the chain changes
    //! nothing on its own outcome.

    use super::run;
    use kruise_core::admission::pod_chain::{PodChain, PodMutator};
    use kruise_core::enhanced_liveness::EnhancedLivenessStep;
    use kruise_core::launch_priority::LaunchPriorityStep;
    use kruise_core::readiness::ReadinessGateStep;
    use proptest::prelude::*;
    use serde_json::json;

    fn pod() -> impl Strategy<Value = k8s_openapi::api::core::v1::Pod> {
        let container = (
            prop::option::of(prop_oneof![
                Just("3".to_owned()),
                Just("-1".to_owned()),
                Just("0".to_owned()),
                Just("x".to_owned()),
                Just("99999999999".to_owned())
            ]),
            any::<bool>(),
            any::<bool>(),
        );
        (
            prop::collection::vec(container, 1..5),
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just("apps.kruise.io/v1alpha1"), Just("apps/v1"), Just("")],
            any::<bool>(),
        )
            .prop_map(|(containers, ordered, enhanced, owner, generated)| {
                let containers: Vec<serde_json::Value> = containers
                    .iter()
                    .enumerate()
                    .map(|(i, (priority, probe, barrier))| {
                        let mut c = json!({"name": format!("c{i}"), "image": "app:1"});
                        let mut env = Vec::new();
                        if let Some(p) = priority {
                            env.push(json!({"name": "KRUISE_CONTAINER_PRIORITY", "value": p}));
                        }
                        if *barrier {
                            env.push(json!({"name": "KRUISE_CONTAINER_BARRIER", "value": "mine"}));
                        }
                        if !env.is_empty() {
                            c["env"] = json!(env);
                        }
                        if *probe {
                            c["livenessProbe"] = json!({"exec": {"command": ["true"]}, "periodSeconds": 5});
                        }
                        c
                    })
                    .collect();
                let mut notes = serde_json::Map::new();
                if ordered {
                    notes.insert("apps.kruise.io/container-launch-priority".into(), "Ordered".into());
                }
                if enhanced {
                    notes.insert("apps.kruise.io/using-enhanced-liveness".into(), "true".into());
                }
                let mut meta = json!({"namespace": "ns", "annotations": notes});
                if generated {
                    meta["generateName"] = "web-".into();
                } else {
                    meta["name"] = "web-0".into();
                }
                if !owner.is_empty() {
                    meta["ownerReferences"] = json!([{"apiVersion": owner, "kind": "CloneSet", "name": "web", "uid": "u", "controller": true}]);
                }
                serde_json::from_value(json!({"metadata": meta, "spec": {"containers": containers}}))
                    .expect("a pod")
            })
    }

    proptest! {
        #[test]
        fn the_steps_patch_exactly_and_settle(pod in pod(), all_pods in any::<bool>()) {
            let readiness = ReadinessGateStep { all_pods };
            let priority = LaunchPriorityStep { name_suffix: "x7k2q".into() };
            let liveness = EnhancedLivenessStep;
            let steps: Vec<&dyn PodMutator> = vec![&liveness, &priority, &readiness];
            let chain = PodChain::new(steps);
            match run(&chain, &pod) {
                Err(err) => {
                    let message = err.to_string();
                    prop_assert!(message.contains("spec.containers["), "{}", message);
                }
                Ok(changed) => {
                    let changed = changed.unwrap_or(pod);
                    prop_assert_eq!(run(&chain, &changed).expect("admitted again"), None);
                }
            }
        }
    }
}
