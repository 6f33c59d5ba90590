use super::*;

fn ts(text: &str) -> Timestamp {
    text.parse().expect("a timestamp")
}

const NOW: &str = "2026-01-01T09:00:00Z";

/// The manual's example (`resourcedistribution.md`): a ConfigMap to ns-1, ns-4 and the
/// namespaces labelled group=test, except ns-3.
fn manual() -> ResourceDistribution {
    distribution(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "game-demo"},
        "data": {"game.properties": "enemy.types=aliens,monsters\nplayer.maximum-lives=5\n",
                 "player_initial_lives": "3"},
    }))
}

fn distribution(resource: Value) -> ResourceDistribution {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "ResourceDistribution",
        "metadata": {"name": "sample", "uid": "rd-uid", "generation": 2},
        "spec": {
            "resource": resource,
            "targets": {
                "excludedNamespaces": {"list": [{"name": "ns-3"}]},
                "includedNamespaces": {"list": [{"name": "ns-1"}, {"name": "ns-4"}]},
                "namespaceSelector": {"matchLabels": {"group": "test"}},
            },
        },
    }))
    .expect("a distribution")
}

fn ns(name: &str, labels: &[(&str, &str)]) -> NamespaceView {
    NamespaceView {
        name: name.to_owned(),
        labels: labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        terminating: false,
    }
}

fn cluster() -> Vec<NamespaceView> {
    vec![
        ns("default", &[]),
        ns("kube-system", &[("group", "test")]),
        ns("ns-1", &[]),
        ns("ns-2", &[("group", "test")]),
        ns("ns-3", &[("group", "test")]),
        ns("ns-5", &[("group", "other")]),
    ]
}

fn snapshot(distribution: ResourceDistribution, copies: Vec<Value>) -> Snapshot {
    Snapshot {
        distribution,
        namespaces: cluster(),
        copies: copies.into_iter().map(Arc::new).collect(),
        failures: Vec::new(),
    }
}

/// The copy the distribution writes in `namespace`, as the server stores it.
fn stored_copy(distribution: &ResourceDistribution, namespace: &str) -> Value {
    let resource = Resource::parse(&distribution.spec.resource.0).expect("a resource");
    let hash = source_hash(&distribution.spec.resource.0);
    let mut copy = desired_copy(distribution, &resource, namespace, &hash);
    copy["metadata"]["resourceVersion"] = json!("10");
    copy["metadata"]["uid"] = json!(format!("{namespace}-copy"));
    copy
}

fn written(plan: &Plan<ResourceDistributionStatus>) -> Vec<String> {
    plan.actions
        .iter()
        .map(|a| match a {
            Action::CreateObject { target, .. } => format!("create {:?}", target.namespace),
            Action::PatchObject { target, .. } => format!("patch {:?}", target.namespace),
            Action::DeleteObject { target } => format!("delete {:?}", target.namespace),
            other => format!("{other:?}"),
        })
        .collect()
}

fn condition(
    status: &ResourceDistributionStatus,
    type_: ResourceDistributionConditionType,
) -> &ResourceDistributionCondition {
    status.conditions.iter().find(|c| c.type_ == type_).expect("the condition")
}

#[test]
fn targets_are_the_union_minus_the_excluded_and_the_system_namespaces() {
    let rd = manual();
    let targets = target_namespaces(&rd.spec.targets, &cluster()).expect("targets");
    // ns-4 is listed though it does not exist; kube-system matches the selector but never
    // counts; ns-3 is excluded.
    assert_eq!(targets.into_iter().collect::<Vec<_>>(), ["ns-1", "ns-2", "ns-4"]);

    let mut all = rd.spec.targets.clone();
    all.all_namespaces = true;
    let targets = target_namespaces(&all, &cluster()).expect("targets");
    assert_eq!(targets.into_iter().collect::<Vec<_>>(), ["default", "ns-1", "ns-2", "ns-5"]);

    let mut none = ResourceDistributionTargets::default();
    none.namespace_selector.match_labels = Some(BTreeMap::new());
    assert!(target_namespaces(&none, &cluster()).expect("targets").is_empty());
}

#[test]
fn the_manual_example_creates_copies_and_reports_the_missing_namespace() {
    let plan = plan(&snapshot(manual(), vec![]), ts(NOW));
    assert_eq!(written(&plan), ["create Some(\"ns-1\")", "create Some(\"ns-2\")"]);
    insta::assert_yaml_snapshot!(serde_json::to_value(&plan).expect("json"));
}

#[test]
fn the_hash_is_upstreams() {
    // sha256 of `{"apiVersion":"v1","data":{"a":"\u003cb\u003e"},"kind":"ConfigMap","metadata":{"name":"x"}}`,
    // the bytes kube-apiserver would send for this resource.
    let raw = json!({"kind": "ConfigMap", "metadata": {"name": "x"}, "apiVersion": "v1",
                     "data": {"a": "<b>"}});
    let text = crate::revision::gojson::encode_sorted(&raw);
    assert_eq!(
        text,
        r#"{"apiVersion":"v1","data":{"a":"\u003cb\u003e"},"kind":"ConfigMap","metadata":{"name":"x"}}"#
    );
    assert_eq!(source_hash(&raw).len(), 64);
    assert_ne!(source_hash(&raw), source_hash(&json!({"kind": "ConfigMap"})));
}

#[test]
fn copies_in_sync_cost_nothing_and_the_status_settles() {
    let rd = manual();
    let first = plan(&snapshot(rd.clone(), vec![]), ts(NOW));
    let mut rd = rd;
    rd.status = Some(first.status.clone().expect("a status"));
    let copies = vec![stored_copy(&rd, "ns-1"), stored_copy(&rd, "ns-2")];
    let second = plan(&snapshot(rd.clone(), copies.clone()), ts("2026-01-01T09:01:00Z"));
    assert!(second.actions.is_empty(), "{:?}", written(&second));
    assert!(second.status.is_none(), "the status did not change: {:?}", second.status);
    let status = rd.status.expect("a status");
    assert_eq!((status.desired, status.succeeded, status.failed), (3, 2, 1));
}

#[test]
fn a_changed_resource_patches_every_copy_and_keeps_labels_others_added() {
    let old = manual();
    let mut copy = stored_copy(&old, "ns-1");
    copy["metadata"]["labels"] = json!({"team": "a"});
    let mut rd = old.clone();
    rd.spec.resource.0["data"] = json!({"player_initial_lives": "4"});
    rd.spec.resource.0["metadata"]["labels"] = json!({"app": "game"});
    let plan = plan(&snapshot(rd, vec![copy, stored_copy(&old, "ns-2")]), ts(NOW));
    assert_eq!(written(&plan), ["patch Some(\"ns-1\")", "patch Some(\"ns-2\")"]);
    let Action::PatchObject { target, patch, .. } = &plan.actions[0] else { panic!() };
    assert_eq!(target.guard, Guard::ResourceVersion("10".into()));
    let body = patch.body();
    assert_eq!(body["data"]["player_initial_lives"], json!("4"));
    assert_eq!(body["data"]["game.properties"], Value::Null, "a key the resource dropped goes");
    assert_eq!(body["metadata"]["labels"], json!({"app": "game"}), "others' labels are untouched");
}

#[test]
fn a_hand_edited_copy_is_a_conflict_and_left_alone() {
    let rd = manual();
    let mut edited = stored_copy(&rd, "ns-1");
    edited["data"]["player_initial_lives"] = json!("99");
    let plan = plan(&snapshot(rd, vec![edited, stored_copy(&manual(), "ns-2")]), ts(NOW));
    assert!(plan.actions.iter().all(|a| !matches!(a, Action::PatchObject { .. })));
    let status = plan.status.expect("a status");
    let conflict = condition(&status, ResourceDistributionConditionType::ConflictOccurred);
    assert_eq!(conflict.status, ResourceDistributionConditionStatus::True);
    assert_eq!(conflict.failed_namespaces, ["ns-1"]);
    assert_eq!(conflict.reason, CONFLICT_EDITED);
    assert_eq!((status.desired, status.succeeded, status.failed), (3, 1, 2));
    assert!(plan.events.iter().any(|e| e.reason == "ConflictOccurred"));
}

#[test]
fn an_object_someone_else_owns_or_relabelled_is_a_conflict() {
    let rd = manual();
    let mut theirs = stored_copy(&rd, "ns-1");
    theirs["metadata"]["ownerReferences"] = json!([]);
    let mut moved = stored_copy(&rd, "ns-2");
    moved["metadata"]["annotations"][RESOURCE_DISTRIBUTION_SOURCE] = json!("another");
    let plan = plan(&snapshot(rd, vec![theirs, moved]), ts(NOW));
    assert!(plan.actions.is_empty(), "{:?}", written(&plan));
    let status = plan.status.expect("a status");
    let conflict = condition(&status, ResourceDistributionConditionType::ConflictOccurred);
    assert_eq!(conflict.failed_namespaces, ["ns-1", "ns-2"]);
    assert_eq!(conflict.reason, format!("{CONFLICT_NOT_OWNED}; {CONFLICT_SOURCE_CHANGED}"));
}

#[test]
fn a_namespace_that_stops_matching_loses_its_copy() {
    let rd = manual();
    let copies = vec![stored_copy(&rd, "ns-1"), stored_copy(&rd, "ns-2"), stored_copy(&rd, "ns-5")];
    let plan = plan(&snapshot(rd, copies), ts(NOW));
    assert_eq!(written(&plan), ["delete Some(\"ns-5\")"]);
    let Action::DeleteObject { target } = &plan.actions[0] else { panic!() };
    assert_eq!(target.guard, Guard::Uid("ns-5-copy".into()));
}

#[test]
fn a_failed_write_counts_as_failed_until_it_succeeds() {
    let mut snap = snapshot(manual(), vec![]);
    snap.failures.push(Failure {
        namespace: "ns-2".into(),
        operation: Operation::Create,
        message: "admission webhook denied".into(),
    });
    let plan = plan(&snap, ts(NOW));
    assert_eq!(written(&plan).len(), 2, "it is tried again");
    let status = plan.status.expect("a status");
    let create = condition(&status, ResourceDistributionConditionType::CreateResourceFailed);
    assert_eq!(create.failed_namespaces, ["ns-2"]);
    assert_eq!(create.reason, "admission webhook denied");
    assert_eq!((status.succeeded, status.failed), (1, 2));
}

#[test]
fn secrets_compare_as_stored() {
    let rd = distribution(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
        "stringData": {"user": "admin"},
    }));
    let resource = Resource::parse(&rd.spec.resource.0).expect("a resource");
    let body = content(resource.kind, resource.body);
    assert_eq!(body["data"]["user"], json!("YWRtaW4="));
    assert_eq!(body["type"], json!("Opaque"));
    assert!(!body.contains_key("stringData"));
    // As kube-apiserver stores the copy: data, a type, and no stringData.
    let mut stored = stored_copy(&rd, "ns-1");
    assert_eq!(stored["data"]["user"], json!("YWRtaW4="));
    stored.as_object_mut().map(|o| o.remove("stringData"));
    let hash = source_hash(&rd.spec.resource.0);
    assert_eq!(copy_state(&rd, &resource, &hash, &stored), CopyState::InSync);
}

#[test]
fn bad_resources_are_named() {
    for (raw, error) in [
        (Value::Null, ResourceError::Empty),
        (
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}),
            ResourceError::Unsupported { group: String::new(), kind: "Pod".into() },
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
            ResourceError::Unsupported { group: "apps".into(), kind: "ConfigMap".into() },
        ),
        (json!({"apiVersion": "v1", "kind": "Secret"}), ResourceError::MissingName),
        (json!({"metadata": {"name": "x"}}), ResourceError::MissingKind),
    ] {
        assert_eq!(Resource::parse(&raw), Err(error));
    }
    let plan = plan(&snapshot(distribution(json!({"kind": "Pod"})), vec![]), ts(NOW));
    assert!(plan.actions.is_empty() && plan.status.is_none());
    assert_eq!(plan.events[0].reason, "InvalidResource");
}

#[test]
fn the_webhook_rules() {
    use admission::validate_resource_distribution as validate;
    let rd = manual();
    assert!(validate(&rd, None).is_empty());

    let mut renamed = rd.clone();
    renamed.spec.resource.0["metadata"]["name"] = json!("other");
    assert_eq!(
        validate(&renamed, Some(&rd)).to_string(),
        "spec.resource: Invalid value: null: resource apiVersion, kind, and name are immutable"
    );

    let mut bad = rd.clone();
    bad.spec.targets.included_namespaces.list[0].name = "Bad_NS".into();
    bad.spec.targets.excluded_namespaces.list[0].name = "ns-4".into();
    let text = validate(&bad, None).to_string();
    assert!(text.contains("spec.targets.includedNamespaces: Invalid value: \"Bad_NS\""), "{text}");
    assert!(text.contains("namespace [ns-4] is in both"), "{text}");

    let mut pod = rd;
    pod.spec.resource.0["kind"] = json!("Pod");
    let text = validate(&pod, None).to_string();
    assert!(
        text.starts_with("spec.resource: Invalid value: null: unknown or unsupported"),
        "{text}"
    );
}
