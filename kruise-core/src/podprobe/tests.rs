#![allow(clippy::unwrap_used)]

use super::*;
use kruise_api::apps::v1alpha1::{ContainerProbeState, NodePodProbeStatus, PodProbeStatus};
use proptest::prelude::*;
use serde_json::json;

fn now() -> Timestamp {
    Timestamp::from_second(1_700_000_000).unwrap()
}

fn pod(name: &str, labels: serde_json::Value, initialized: bool) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "labels": labels},
        "spec": {"nodeName": "node-1", "containers": [{"name": "main", "image": "x", "ports": [{"name": "main-port", "containerPort": 80}]}]},
        "status": {
            "phase": "Running",
            "podIP": format!("10.0.0.{}", name.len()),
            "conditions": [{"type": "Initialized", "status": if initialized { "True" } else { "False" }}]
        }
    }))
    .unwrap()
}

fn marker(name: &str, app: &str, probes: serde_json::Value) -> PodProbeMarker {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "generation": 2},
        "spec": {"selector": {"matchLabels": {"app": app}}, "probes": probes}
    }))
    .unwrap()
}

fn healthy() -> serde_json::Value {
    json!([{
        "name": "healthy",
        "containerName": "main",
        "probe": {"exec": {"command": ["cat", "/tmp/ready"]}},
        "podConditionType": "game.io/healthy",
        "markerPolicy": [
            {"state": "Succeeded", "labels": {"healthy": "true"}, "annotations": {"controller.kubernetes.io/pod-deletion-cost": "10"}},
            {"state": "Failed", "labels": {"healthy": "false"}, "annotations": {"controller.kubernetes.io/pod-deletion-cost": "-10"}}
        ]
    }])
}

fn npp(spec: NodePodProbeSpec, status: Option<NodePodProbeStatus>) -> NodePodProbe {
    let mut probe = NodePodProbe::new("node-1", spec);
    probe.metadata.uid = Some("npp-uid".into());
    probe.metadata.resource_version = Some("7".into());
    probe.status = status;
    probe
}

fn snapshot<'a>(
    node: NodeState,
    probe: Option<&'a NodePodProbe>,
    pods: &'a [Pod],
    markers: &'a [PodProbeMarker],
) -> NodeSnapshot<'a> {
    NodeSnapshot {
        node_name: "node-1",
        node,
        serverless: false,
        enhanced_liveness: false,
        probe,
        pods: pods.iter().collect(),
        markers: markers.iter().collect(),
    }
}

#[test]
fn a_ready_node_gets_its_probe_object_with_the_matched_pods() {
    let pods = [
        pod("a", json!({"app": "web"}), true),
        pod("b", json!({"app": "db"}), true),
        pod("c", json!({"app": "web"}), false),
    ];
    let markers = [marker("ppm-1", "web", healthy())];
    let plan = plan_node(&snapshot(NodeState::Ready, None, &pods, &markers), now());
    let [Action::CreateObject { body, .. }] = plan.actions.as_slice() else {
        panic!("{:?}", plan.actions)
    };
    assert_eq!(
        body["spec"],
        json!({"podProbes": [{
            "name": "a", "namespace": "ns", "uid": "uid-a", "IP": "10.0.0.1",
            "probes": [{"name": "ppm-1#healthy", "containerName": "main", "probe": {"exec": {"command": ["cat", "/tmp/ready"]}}}]
        }]})
    );
    // Not ready, virtual, or gone: none is created.
    for state in [NodeState::NotReady, NodeState::Virtual, NodeState::Missing] {
        assert!(plan_node(&snapshot(state, None, &pods, &markers), now()).actions.is_empty());
    }
}

#[test]
fn a_gone_node_loses_its_probe_object() {
    let probe = npp(NodePodProbeSpec::default(), None);
    for state in [NodeState::Missing, NodeState::Deleting] {
        let plan = plan_node(&snapshot(state, Some(&probe), &[], &[]), now());
        assert!(matches!(
            plan.actions.as_slice(),
            [Action::DeleteObject { target }] if target.guard == Guard::Uid("npp-uid".into())
        ));
    }
}

#[test]
fn entries_keep_their_places_and_stale_ones_go() {
    let pods = [pod("a", json!({"app": "web"}), true), pod("b", json!({"app": "web"}), true)];
    let markers = [marker("ppm-1", "web", healthy())];
    // The NodePodProbe lists b first, a removed marker's probe on b, and a pod that is gone.
    let current: NodePodProbeSpec = serde_json::from_value(json!({"podProbes": [
        {"name": "gone", "namespace": "ns", "uid": "uid-gone", "IP": "1.1.1.1", "probes": [{"name": "ppm-1#healthy", "containerName": "main", "probe": {}}]},
        {"name": "b", "namespace": "ns", "uid": "uid-b", "IP": "10.0.0.1", "probes": [
            {"name": "old#idle", "containerName": "main", "probe": {}},
            {"name": "ppm-1#healthy", "containerName": "main", "probe": {"exec": {"command": ["stale"]}}}
        ]}
    ]}))
    .unwrap();
    let spec = desired_spec(
        Some(&current),
        &pods.iter().collect::<Vec<_>>(),
        &markers.iter().collect::<Vec<_>>(),
        false,
    );
    let names: Vec<(&str, Vec<&str>)> = spec
        .pod_probes
        .iter()
        .map(|p| (p.name.as_str(), p.probes.iter().map(|c| c.name.as_str()).collect()))
        .collect();
    assert_eq!(names, [("b", vec!["ppm-1#healthy"]), ("a", vec!["ppm-1#healthy"])]);
    assert_eq!(
        spec.pod_probes[0].probes[0].probe.probe.exec.as_ref().unwrap().command.as_ref().unwrap(),
        &["cat", "/tmp/ready"]
    );
    // A recreated pod (another UID) is a new entry, appended.
    let mut recreated = pods.clone();
    recreated[1].metadata.uid = Some("uid-b2".into());
    let spec2 = desired_spec(
        Some(&spec),
        &recreated.iter().collect::<Vec<_>>(),
        &markers.iter().collect::<Vec<_>>(),
        false,
    );
    assert_eq!(
        spec2.pod_probes.iter().map(|p| p.uid.as_str()).collect::<Vec<_>>(),
        ["uid-a", "uid-b2"]
    );
}

#[test]
fn named_ports_resolve_and_unresolvable_ones_keep_the_old_probe() {
    let pods = [pod("a", json!({"app": "web"}), true)];
    let tcp = |port: serde_json::Value| json!([{"name": "tcp", "containerName": "main", "probe": {"tcpSocket": {"port": port}}, "podConditionType": "x/tcp"}]);
    let markers = [marker("ppm-1", "web", tcp(json!("main-port")))];
    let spec = desired_spec(
        None,
        &pods.iter().collect::<Vec<_>>(),
        &markers.iter().collect::<Vec<_>>(),
        false,
    );
    assert_eq!(
        serde_json::to_value(&spec.pod_probes[0].probes[0].probe).unwrap(),
        json!({"tcpSocket": {"port": 80}})
    );
    let broken = [marker("ppm-1", "web", tcp(json!("nope")))];
    assert_eq!(
        resolve_probe(&pods[0], &broken[0].spec.probes[0]).unwrap_err(),
        "Failed to extract port for container: main in pod: ns/a"
    );
    let kept = desired_spec(
        Some(&spec),
        &pods.iter().collect::<Vec<_>>(),
        &broken.iter().collect::<Vec<_>>(),
        false,
    );
    assert_eq!(kept, spec);
    assert!(
        desired_spec(
            None,
            &pods.iter().collect::<Vec<_>>(),
            &broken.iter().collect::<Vec<_>>(),
            false
        )
        .pod_probes
        .is_empty()
    );
}

fn status_of(state: &str, message: &str) -> NodePodProbeStatus {
    NodePodProbeStatus {
        pod_probe_statuses: vec![PodProbeStatus {
            name: "a".into(),
            namespace: "ns".into(),
            uid: "uid-a".into(),
            probe_states: vec![ContainerProbeState {
                name: "ppm-1#healthy".into(),
                state: serde_json::from_value(json!(state)).unwrap(),
                last_probe_time: Some(Time(now())),
                last_transition_time: Some(Time(now())),
                message: message.into(),
            }],
        }],
    }
}

#[test]
fn results_become_the_condition_and_markers() {
    let mut pods = [pod("a", json!({"app": "web", "healthy": "false"}), true)];
    let markers = [marker("ppm-1", "web", healthy())];
    let spec = desired_spec(
        None,
        &pods.iter().collect::<Vec<_>>(),
        &markers.iter().collect::<Vec<_>>(),
        false,
    );
    let probe = npp(spec, Some(status_of("Succeeded", "ready")));
    let plan = plan_node(&snapshot(NodeState::Ready, Some(&probe), &pods, &markers), now());
    let [Action::PatchPodStatus { name, purpose: PodStatusPurpose::ProbeMarker, patch, .. }] =
        plan.actions.as_slice()
    else {
        panic!("{:?}", plan.actions)
    };
    assert_eq!(name, "a");
    let body = patch.body();
    assert_eq!(body["metadata"]["labels"], json!({"healthy": "true"}));
    assert_eq!(
        body["metadata"]["annotations"],
        json!({"controller.kubernetes.io/pod-deletion-cost": "10"})
    );
    assert_eq!(body["status"]["conditions"][0]["type"], "game.io/healthy");
    assert_eq!(body["status"]["conditions"][0]["status"], "True");
    assert_eq!(body["status"]["conditions"][0]["message"], "ready");

    // Applied, the plan asks for nothing more.
    let patched = crate::smp::apply_patch(
        &serde_json::to_value(&pods[0]).unwrap(),
        body,
        crate::smp::PatchSchema::Pod,
    )
    .unwrap();
    pods[0] = serde_json::from_value(patched).unwrap();
    let plan = plan_node(&snapshot(NodeState::Ready, Some(&probe), &pods, &markers), now());
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);

    // Unknown removes both policies' markers and makes the condition False.
    let unknown = npp(probe.spec.clone(), Some(status_of("Unknown", "")));
    let plan = plan_node(&snapshot(NodeState::Ready, Some(&unknown), &pods, &markers), now());
    let [Action::PatchPodStatus { patch, .. }] = plan.actions.as_slice() else {
        panic!("{:?}", plan.actions)
    };
    assert_eq!(patch.body()["metadata"]["labels"], json!({"healthy": null}));
    assert_eq!(patch.body()["status"]["conditions"][0]["status"], "False");
}

#[test]
fn marker_status_counts_probed_pods_and_releases_the_finalizer() {
    let pods = [pod("a", json!({"app": "web"}), true), pod("b", json!({"app": "web"}), false)];
    let m = marker("ppm-1", "web", healthy());
    let exists = |n: &str| n == "node-1";
    let snap = MarkerSnapshot {
        marker: &m,
        pods: pods.iter().collect(),
        node_exists: &exists,
        probes_left: 0,
    };
    let plan = plan_marker(&snap, now());
    assert_eq!(plan.status, Some(PodProbeMarkerStatus { observed_generation: 2, matched_pods: 1 }));
    let mut done = m.clone();
    done.status = plan.status.clone();
    let snap = MarkerSnapshot { marker: &done, ..snap };
    assert_eq!(plan_marker(&snap, now()).status, None);

    let mut deleting = m.clone();
    deleting.metadata.deletion_timestamp = Some(Time(now()));
    deleting.metadata.finalizers = Some(vec![NODE_POD_PROBE_CLEANUP.into(), "other".into()]);
    deleting.metadata.resource_version = Some("9".into());
    let waiting = MarkerSnapshot {
        marker: &deleting,
        pods: Vec::new(),
        node_exists: &exists,
        probes_left: 2,
    };
    assert!(plan_marker(&waiting, now()).actions.is_empty());
    let released = MarkerSnapshot { probes_left: 0, ..waiting };
    let plan = plan_marker(&released, now());
    let [Action::PatchObject { patch, target, .. }] = plan.actions.as_slice() else { panic!() };
    assert_eq!(patch.body(), &json!({"metadata": {"finalizers": ["other"]}}));
    assert_eq!(target.guard, Guard::ResourceVersion("9".into()));
}

fn arb_pods() -> impl Strategy<Value = Vec<Pod>> {
    prop::collection::vec((0usize..6, 0usize..3, any::<bool>(), any::<bool>()), 0..8).prop_map(
        |specs| {
            let apps = ["web", "db", "cache"];
            let mut seen = std::collections::BTreeSet::new();
            specs
                .into_iter()
                .filter(|(n, ..)| seen.insert(*n))
                .map(|(n, app, init, failed)| {
                    let mut p = pod(&format!("p{n}"), json!({"app": apps[app]}), init);
                    if failed {
                        p.status.as_mut().unwrap().phase = Some("Failed".into());
                    }
                    p
                })
                .collect()
        },
    )
}

proptest! {
    /// Planning again on the outcome of a plan asks for nothing; every listed pod is probed
    /// and matched, listed once, with unique probe names.
    #[test]
    fn the_node_plan_is_idempotent(pods in arb_pods(), first in arb_pods(), apps in prop::collection::vec(0usize..3, 0..3)) {
        let names = ["web", "db", "cache"];
        let markers: Vec<PodProbeMarker> = apps.iter().enumerate().map(|(i, a)| marker(&format!("m{i}"), names[*a], healthy())).collect();
        let refs: Vec<&PodProbeMarker> = markers.iter().collect();
        let start = desired_spec(None, &first.iter().collect::<Vec<_>>(), &refs, false);
        let spec = desired_spec(Some(&start), &pods.iter().collect::<Vec<_>>(), &refs, false);
        prop_assert_eq!(&desired_spec(Some(&spec), &pods.iter().collect::<Vec<_>>(), &refs, false), &spec);
        let mut uids = std::collections::BTreeSet::new();
        for entry in &spec.pod_probes {
            prop_assert!(uids.insert(entry.uid.clone()));
            let pod = pods.iter().find(|p| p.metadata.uid.as_deref() == Some(entry.uid.as_str())).unwrap();
            prop_assert!(is_probed(pod));
            prop_assert!(!markers_for(pod, &refs).is_empty());
            let mut probes = std::collections::BTreeSet::new();
            for probe in &entry.probes {
                prop_assert!(probes.insert(probe.name.clone()));
            }
        }
    }
}

fn serverless_marker(name: &str, probes: serde_json::Value) -> PodProbeMarker {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "probes": probes}
    }))
    .unwrap()
}

#[test]
fn serverless_pods_get_their_probes_at_creation() {
    // Upstream's webhook fixture.
    let markers = [
        serverless_marker(
            "healthy",
            json!([
                {"name": "healthy", "containerName": "main", "probe": {}, "podConditionType": "game.kruise.io/healthy",
                 "markerPolicy": [{"state": "Succeeded", "labels": {"h": "true"}}]},
                {"name": "healthy", "containerName": "envoy", "probe": {}, "podConditionType": "game.kruise.io/healthy"}
            ]),
        ),
        serverless_marker(
            "init",
            json!([
                {"name": "init", "containerName": "init-1", "probe": {}, "podConditionType": "game.kruise.io/init"},
                {"name": "init", "containerName": "init-2", "probe": {}, "podConditionType": "game.kruise.io/init"}
            ]),
        ),
        serverless_marker(
            "none",
            json!([
                {"name": "x", "containerName": "main", "probe": {}, "markerPolicy": [{"state": "Succeeded", "labels": {"x": "1"}}]}
            ]),
        ),
    ];
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web"}},
        "spec": {
            "initContainers": [{"name": "init-1"}, {"name": "init-2", "restartPolicy": "Always"}],
            "containers": [{"name": "main"}, {"name": "envoy"}]
        }
    }))
    .unwrap();
    let refs: Vec<&PodProbeMarker> = markers.iter().collect();
    let step = serverless::serverless_step(&pod, &MarkerIndex::new(&refs)).unwrap();
    assert_eq!(
        step.probes,
        r#"[{"name":"healthy","containerName":"main","probe":{},"podConditionType":"game.kruise.io/healthy"},{"name":"init","containerName":"init-2","probe":{},"podConditionType":"game.kruise.io/init"}]"#
    );
    assert_eq!(step.markers, "healthy,init");
    // A pod no marker selects gets nothing.
    let mut other = pod.clone();
    other.metadata.labels = None;
    assert!(serverless::serverless_step(&other, &MarkerIndex::new(&refs)).is_none());
}

#[test]
fn serverless_pods_are_marked_from_their_conditions() {
    let markers = [serverless_marker(
        "ppm",
        json!([
            {"name": "idle", "containerName": "main", "probe": {}, "podConditionType": "game.io/idle",
             "markerPolicy": [
                {"state": "Succeeded", "labels": {"gameserver-idle": "true"}, "annotations": {"controller.kubernetes.io/pod-deletion-cost": "-10"}},
                {"state": "Failed", "labels": {"gameserver-idle": "false"}}
             ]},
            {"name": "healthy", "containerName": "main", "probe": {}, "podConditionType": "game.io/healthy",
             "markerPolicy": [{"state": "Failed", "labels": {"gameserver-healthy": "false"}, "annotations": {"controller.kubernetes.io/ingress": "false"}}]}
        ]),
    )];
    let refs: Vec<&PodProbeMarker> = markers.iter().collect();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"app": "web"}},
        "spec": {"nodeName": "vk-1", "containers": [{"name": "main"}]},
        "status": {"phase": "Running", "conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "game.io/idle", "status": "True"},
            {"type": "game.io/healthy", "status": "False"}
        ]}
    }))
    .unwrap();
    let pods = [pod];
    let snapshot = NodeSnapshot {
        node_name: "vk-1",
        node: NodeState::Virtual,
        serverless: true,
        enhanced_liveness: false,
        probe: None,
        pods: pods.iter().collect(),
        markers: refs.clone(),
    };
    let plan = plan_node(&snapshot, now());
    let [Action::PatchPodStatus { patch, .. }] = plan.actions.as_slice() else {
        panic!("{:?}", plan.actions)
    };
    assert_eq!(
        patch.body()["metadata"]["labels"],
        json!({"gameserver-idle": "true", "gameserver-healthy": "false"})
    );
    assert_eq!(
        patch.body()["metadata"]["annotations"],
        json!({"controller.kubernetes.io/pod-deletion-cost": "-10", "controller.kubernetes.io/ingress": "false"})
    );
    assert!(patch.body().get("status").is_none());
    // Without the gate, virtual nodes are left alone.
    let off = NodeSnapshot { serverless: false, ..snapshot };
    assert!(plan_node(&off, now()).actions.is_empty());
}

#[test]
fn saved_liveness_probes_are_listed_with_the_gate() {
    let mut p = pod("web-1", json!({"app": "other"}), true);
    let notes = p.metadata.annotations.get_or_insert_with(Default::default);
    notes.insert("apps.kruise.io/using-enhanced-liveness".into(), "true".into());
    notes.insert(
        "apps.kruise.io/container-probe-context".into(),
        json!([{"name": "main", "livenessProbe": {"tcpSocket": {"port": "main-port"}, "periodSeconds": 3}}]).to_string(),
    );
    let pods = [p];
    let refs: Vec<&Pod> = pods.iter().collect();
    assert!(desired_spec(None, &refs, &[], false).pod_probes.is_empty(), "not without the gate");
    let spec = desired_spec(None, &refs, &[], true);
    let probes = &spec.pod_probes[0].probes;
    assert_eq!(
        (probes[0].name.as_str(), probes[0].container_name.as_str()),
        ("web-1-main", "main")
    );
    let tcp = probes[0].probe.probe.tcp_socket.as_ref().unwrap();
    assert_eq!(tcp.port, IntOrString::Int(80), "the named port is resolved");
    assert_eq!(desired_spec(Some(&spec), &refs, &[], true), spec, "stable");
}
