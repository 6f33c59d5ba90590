//! Expected hashes here were worked out from upstream's algorithm by hand: the Go bytes are
//! spelled out literally, and the hashes computed from those bytes independently of this
//! crate.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_api::apps::v1beta1::{CloneSet, CloneSetSpec, CloneSetStatus};
use serde_json::{Value, json};

use super::*;

fn template(value: Value) -> PodTemplateSpec {
    serde_json::from_value(value).expect("template")
}

fn cloneset(name: &str, tpl: Value) -> CloneSet {
    let mut cs =
        CloneSet::new(name, CloneSetSpec { template: template(tpl), ..CloneSetSpec::default() });
    cs.metadata.namespace = Some("default".into());
    cs.metadata.uid = Some("uid-1".into());
    cs
}

/// The template of upstream's `clonesettest.NewCloneSet`.
fn upstream_test_template() -> Value {
    json!({
        "metadata": {"labels": {"foo": "bar"}},
        "spec": {
            "containers": [{
                "name": "nginx",
                "image": "nginx",
                "volumeMounts": [
                    {"name": "datadir", "mountPath": "/tmp/data"},
                    {"name": "home", "mountPath": "/home"}
                ]
            }],
            "volumes": [{"name": "home", "hostPath": {"path": "/tmp/home"}}]
        }
    })
}

/// A template as kruise's defaulting webhook leaves it.
fn defaulted_nginx_template(image: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": "nginx"}},
        "spec": {
            "containers": [{
                "name": "nginx",
                "image": image,
                "env": [{"name": "version", "value": "v1"}],
                "imagePullPolicy": "Always",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "www-data", "mountPath": "/usr/share/nginx/html"}]
            }],
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30
        }
    })
}

fn escaping_template() -> Value {
    json!({
        "metadata": {"labels": {"app": "web"}, "annotations": {"note": "a<b>&c"}},
        "spec": {
            "containers": [{
                "name": "main",
                "image": "busybox:1.36",
                "command": ["/bin/sh"],
                "args": ["-c", "sleep 1 && echo ok > /tmp/x"],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "readinessProbe": {"grpc": {"port": 9090}, "periodSeconds": 5},
                "resources": {
                    "limits": {"cpu": "1000m", "memory": "0.5Gi"},
                    "requests": {"cpu": "250m", "memory": "128Mi"}
                }
            }]
        }
    })
}

#[test]
fn data_bytes_match_go_for_upstream_fixture() {
    let data = RevisionData::from_template(&template(upstream_test_template())).expect("data");
    assert_eq!(
        data.go_bytes(),
        r#"{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"foo":"bar"}},"spec":{"containers":[{"image":"nginx","name":"nginx","resources":{},"volumeMounts":[{"mountPath":"/tmp/data","name":"datadir"},{"mountPath":"/home","name":"home"}]}],"volumes":[{"hostPath":{"path":"/tmp/home"},"name":"home"}]}}}}"#
    );
    assert_eq!(data.hash(Some(0)), "99b9757c7");
    assert_eq!(data.hash(Some(1)), "99b9757c6");
    // serde_json writes the value with the same bytes when nothing needs HTML escaping.
    assert_eq!(serde_json::to_string(data.value()).expect("encode"), data.go_bytes());
}

#[test]
fn data_bytes_match_upstream_inplace_fixture() {
    // The same document upstream's in-place tests use as revision data (there pretty-printed).
    let data =
        RevisionData::from_template(&template(defaulted_nginx_template("nginx:stable-alpine")))
            .expect("data");
    assert_eq!(
        data.go_bytes(),
        r#"{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"nginx"}},"spec":{"containers":[{"env":[{"name":"version","value":"v1"}],"image":"nginx:stable-alpine","imagePullPolicy":"Always","name":"nginx","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","volumeMounts":[{"mountPath":"/usr/share/nginx/html","name":"www-data"}]}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#
    );
    assert_eq!(data.hash(Some(0)), "656c6d8895");
    assert_eq!(data.hash(Some(1)), "656c6d8894");
}

#[test]
fn data_bytes_escape_and_canonicalise_like_go() {
    let data = RevisionData::from_template(&template(escaping_template())).expect("data");
    assert_eq!(
        data.go_bytes(),
        r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"note":"a\u003cb\u003e\u0026c"},"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"args":["-c","sleep 1 \u0026\u0026 echo ok \u003e /tmp/x"],"command":["/bin/sh"],"image":"busybox:1.36","name":"main","ports":[{"containerPort":8080,"protocol":"TCP"}],"readinessProbe":{"grpc":{"port":9090,"service":null},"periodSeconds":5},"resources":{"limits":{"cpu":"1","memory":"512Mi"},"requests":{"cpu":"250m","memory":"128Mi"}}}]}}}}"#
    );
    assert_eq!(data.hash(Some(0)), "794cdb9b49");
}

#[test]
fn new_revision_names_labels_and_owns() {
    let mut cs = cloneset("sample", upstream_test_template());
    cs.metadata.annotations = Some([("foo".to_owned(), "bar".to_owned())].into());
    let revision = new_revision(&cs, 3, 0).expect("revision");
    assert_eq!(revision.metadata.name.as_deref(), Some("sample-99b9757c7"));
    assert_eq!(revision.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(revision_number(&revision), 3);
    let labels = revision.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("foo").map(String::as_str), Some("bar"));
    assert_eq!(labels.get(HASH_LABEL).map(String::as_str), Some("99b9757c7"));
    let annotations = revision.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(annotations.get("foo").map(String::as_str), Some("bar"));
    assert_eq!(annotations.get(VCT_HASH_ANNOTATION).map(String::as_str), Some(""));
    let owner = &revision.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!(owner.api_version, "apps.kruise.io/v1beta1");
    assert_eq!(owner.kind, "CloneSet");
    assert_eq!(owner.uid, "uid-1");
    assert_eq!(owner.controller, Some(true));
    assert_eq!(owner.block_owner_deletion, Some(true));

    let collided = new_revision(&cs, 3, 1).expect("revision");
    assert_eq!(collided.metadata.name.as_deref(), Some("sample-99b9757c6"));
}

#[test]
fn long_names_are_cut() {
    let long = "a".repeat(300);
    assert_eq!(revision_name(&long, "xyz").len(), 223 + 4);
    assert_eq!(short_hash("sample-99b9757c7"), "99b9757c7");
    assert_eq!(short_hash("plain"), "plain");
}

fn pvc(value: Value) -> PersistentVolumeClaim {
    serde_json::from_value(value).expect("pvc")
}

#[test]
fn volume_claim_template_hash_matches_go() {
    let www = pvc(json!({
        "metadata": {"name": "www-data", "labels": {"ignored": "yes"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }));
    assert_eq!(volume_claim_templates_hash([&www]), "858820154");

    let b = pvc(json!({
        "metadata": {"name": "b"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "resources": {"requests": {"storage": "1024Mi"}}}
    }));
    let a = pvc(
        json!({"metadata": {"name": "a"}, "spec": {"resources": {"requests": {"storage": "10"}}}}),
    );
    // Sorted by name whatever the input order.
    assert_eq!(volume_claim_templates_hash([&b, &a]), "129992075");
    assert_eq!(volume_claim_templates_hash([&a, &b]), "129992075");
    assert_eq!(volume_claim_templates_hash(std::iter::empty()), "");
}

fn revision_with(name: &str, number: i64, data: Value) -> ControllerRevision {
    build_revision(ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() }, data, number)
}

#[test]
fn equal_by_bytes_or_by_content() {
    let cs = cloneset("web", defaulted_nginx_template("nginx:1"));
    let candidate = new_revision(&cs, 2, 0).expect("revision");
    // Same template written differently: keys unsorted, empties present, quantities odd.
    let upstream_like = revision_with(
        "web-old",
        1,
        json!({"spec": {"template": {
            "metadata": {"labels": {"app": "nginx"}, "creationTimestamp": null},
            "$patch": "replace",
            "spec": {
                "terminationGracePeriodSeconds": 30,
                "securityContext": {},
                "schedulerName": "default-scheduler",
                "restartPolicy": "Always",
                "dnsPolicy": "ClusterFirst",
                "hostNetwork": false,
                "containers": [{
                    "name": "nginx", "image": "nginx:1", "resources": {},
                    "env": [{"name": "version", "value": "v1"}],
                    "imagePullPolicy": "Always",
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "volumeMounts": [{"name": "www-data", "mountPath": "/usr/share/nginx/html", "readOnly": false}]
                }]
            }
        }}}),
    );
    assert!(equal_revision(&upstream_like, &candidate));
    assert!(equal_revision(&candidate, &candidate.clone()));

    let other = new_revision(&cloneset("web", defaulted_nginx_template("nginx:2")), 2, 0)
        .expect("revision");
    assert!(!equal_revision(&other, &candidate));

    // Numeric hash labels that differ win over equal data, as upstream.
    let mut a = candidate.clone();
    let mut b = candidate.clone();
    a.metadata.labels = Some([(HASH_LABEL.to_owned(), "42".to_owned())].into());
    b.metadata.labels = Some([(HASH_LABEL.to_owned(), "43".to_owned())].into());
    assert!(!equal_revision(&a, &b));
}

#[test]
fn a_revisions_template_restores_the_workload() {
    let original = cloneset("web", upstream_test_template());
    let revision = new_revision(&original, 1, 0).expect("revision");
    let mut changed = original.clone();
    changed.spec.template.spec.as_mut().expect("spec").containers[0].name = "foo".into();
    changed.metadata.annotations = Some([("foo".to_owned(), "bar".to_owned())].into());

    let mut restored = changed.clone();
    restored.spec.template = template_from_revision(&revision).expect("restore");
    let again = new_revision(&restored, 2, 0).expect("revision");
    assert!(equal_revision(&revision, &again));
    assert_eq!(again.metadata.name, revision.metadata.name);
    // Everything but the template comes from the CloneSet passed in.
    let annotations = again.metadata.annotations.unwrap_or_default();
    assert_eq!(annotations.get("foo").map(String::as_str), Some("bar"));
    assert_eq!(restored.spec.template.spec.expect("spec").containers[0].name, "nginx");
}

#[test]
fn template_from_revision_reports_bad_data() {
    let missing = revision_with("r1", 1, json!({"spec": {}}));
    assert_eq!(
        template_from_revision(&missing),
        Err(RevisionError::MissingTemplate { revision: "r1".into() })
    );
    let bad =
        revision_with("r2", 1, json!({"spec": {"template": {"spec": {"containers": "nope"}}}}));
    assert!(matches!(template_from_revision(&bad), Err(RevisionError::InvalidTemplate { .. })));
}

#[test]
fn revision_numbers_and_order() {
    assert_eq!(next_revision_number(&[]), 1);
    let mut revisions = vec![
        revision_with("b", 2, json!({})),
        revision_with("a", 5, json!({})),
        revision_with("c", 2, json!({})),
    ];
    assert_eq!(next_revision_number(&revisions), 6);
    revisions[0].metadata.creation_timestamp =
        Some(Time("2024-01-02T00:00:00Z".parse().expect("time")));
    revisions[2].metadata.creation_timestamp =
        Some(Time("2024-01-01T00:00:00Z".parse().expect("time")));
    sort_revisions(&mut revisions);
    let names: Vec<_> =
        revisions.iter().map(|r| r.metadata.name.clone().unwrap_or_default()).collect();
    assert_eq!(names, ["c", "b", "a"]);
}

fn with_status(mut cs: CloneSet, current: &str, collision_count: Option<i32>) -> CloneSet {
    cs.status = Some(CloneSetStatus {
        current_revision: current.into(),
        collision_count,
        ..CloneSetStatus::default()
    });
    cs
}

#[test]
fn resolve_creates_first_revision() {
    let cs = cloneset("web", upstream_test_template());
    let active = resolve_revisions(&cs, &[]).expect("resolve");
    let UpdateRevision::Create { revision } = &active.update else { panic!("expected create") };
    assert_eq!(revision.metadata.name.as_deref(), Some("web-99b9757c7"));
    assert_eq!(revision_number(revision), 1);
    assert_eq!(active.current, "web-99b9757c7");
    assert_eq!(active.collision_count, 0);
}

#[test]
fn resolve_keeps_latest_and_current() {
    let v1 = cloneset("web", defaulted_nginx_template("nginx:1"));
    let v2 = cloneset("web", defaulted_nginx_template("nginx:2"));
    let mut r1 = new_revision(&v1, 1, 0).expect("r1");
    let r2 = new_revision(&v2, 2, 0).expect("r2");
    // The old revision was written by upstream with its own byte layout.
    let name1 = r1.metadata.name.clone();
    r1 = build_revision(
        ObjectMeta { name: name1, ..ObjectMeta::default() },
        json!({"spec": {"template": {
            "$patch": "replace",
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1", "env": [{"name": "version", "value": "v1"}],
                "imagePullPolicy": "Always", "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "www-data", "mountPath": "/usr/share/nginx/html"}]}],
                "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                "securityContext": {}, "terminationGracePeriodSeconds": 30}
        }}}),
        1,
    );
    let revisions = vec![r2.clone(), r1.clone()];

    let current_name = r1.metadata.name.clone().unwrap_or_default();
    let active = resolve_revisions(&with_status(v2.clone(), &current_name, Some(0)), &revisions)
        .expect("resolve");
    assert_eq!(
        active.update,
        UpdateRevision::Latest { name: r2.metadata.name.clone().unwrap_or_default() }
    );
    assert_eq!(active.current, current_name);

    // Rolling back to v1 reuses r1 (matched by content) with a new number; r1 has no
    // volume-claim-template hash yet, so it gets the CloneSet's (none: empty).
    let active = resolve_revisions(&with_status(v1.clone(), &current_name, Some(0)), &revisions)
        .expect("resolve");
    assert_eq!(
        active.update,
        UpdateRevision::Reuse {
            name: current_name.clone(),
            revision: 3,
            volume_claim_templates_hash: Some(String::new())
        }
    );
    // Once it has the right hash, only the number changes.
    let mut r1_hashed = r1.clone();
    r1_hashed.metadata.annotations = Some([(VCT_HASH_ANNOTATION.to_owned(), String::new())].into());
    let active =
        resolve_revisions(&with_status(v1, &current_name, Some(0)), &[r2.clone(), r1_hashed])
            .expect("resolve");
    assert_eq!(
        active.update,
        UpdateRevision::Reuse {
            name: current_name.clone(),
            revision: 3,
            volume_claim_templates_hash: None
        }
    );

    // A current revision that no longer exists falls back to the update revision.
    let active = resolve_revisions(&with_status(v2, "gone", None), &revisions).expect("resolve");
    assert_eq!(active.current, r2.metadata.name.unwrap_or_default());
}

#[test]
fn resolve_reuse_updates_vct_hash() {
    let mut v1 = cloneset("web", defaulted_nginx_template("nginx:1"));
    let v2 = cloneset("web", defaulted_nginx_template("nginx:2"));
    let r1 = new_revision(&v1, 1, 0).expect("r1");
    let r2 = new_revision(&v2, 2, 0).expect("r2");
    v1.spec.volume_claim_templates = vec![pvc(json!({
        "metadata": {"name": "www-data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .into()];
    let active = resolve_revisions(&v1, &[r1.clone(), r2]).expect("resolve");
    assert_eq!(
        active.update,
        UpdateRevision::Reuse {
            name: r1.metadata.name.unwrap_or_default(),
            revision: 3,
            volume_claim_templates_hash: Some("858820154".into())
        }
    );
}

#[test]
fn resolve_avoids_name_collisions() {
    let cs = cloneset("web", upstream_test_template());
    // Someone else's revision already has our name but different data.
    let squatter = revision_with(
        "web-99b9757c7",
        1,
        json!({"spec": {"template": {"spec": {"containers": []}}}}),
    );
    let active = resolve_revisions(&cs, std::slice::from_ref(&squatter)).expect("resolve");
    let UpdateRevision::Create { revision } = &active.update else { panic!("expected create") };
    assert_eq!(revision.metadata.name.as_deref(), Some("web-99b9757c6"));
    assert_eq!(active.collision_count, 1);
    // The label keeps the first hash, as upstream leaves it.
    assert_eq!(
        revision.metadata.labels.as_ref().and_then(|l| l.get(HASH_LABEL)).map(String::as_str),
        Some("99b9757c7")
    );

    let attempted = new_revision(&cs, 2, 0).expect("revision");
    match resolve_create_conflict(&cs, &squatter, &attempted, 0) {
        CreateConflict::Retry { collision_count, revision } => {
            assert_eq!(collision_count, 1);
            assert_eq!(revision.metadata.name.as_deref(), Some("web-99b9757c6"));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        resolve_create_conflict(&cs, &attempted.clone(), &attempted, 0),
        CreateConflict::UseExisting { name: "web-99b9757c7".into() }
    );
}

fn pod_at(revision: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            labels: Some([(POD_REVISION_LABEL.to_owned(), revision.to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

#[test]
fn pruning_keeps_live_revisions_and_the_limit() {
    let mut cs = cloneset("web", upstream_test_template());
    cs.spec.revision_history_limit = Some(2);
    let revisions: Vec<ControllerRevision> =
        (1..=7).map(|i| revision_with(&format!("web-h{i}"), i, json!({}))).collect();
    // h7 update, h6 current, h2 used by a pod (by short hash only).
    let pods = vec![pod_at("h2")];
    let pruned: Vec<_> = revisions_to_prune(&cs, &pods, &revisions, "web-h6", "web-h7")
        .into_iter()
        .map(|r| r.metadata.name.clone().unwrap_or_default())
        .collect();
    // Not live: h1, h3, h4, h5; keep the newest two (h4, h5).
    assert_eq!(pruned, ["web-h1", "web-h3"]);

    cs.spec.revision_history_limit = None;
    assert!(revisions_to_prune(&cs, &pods, &revisions, "web-h6", "web-h7").is_empty());
    cs.spec.revision_history_limit = Some(-1);
    assert_eq!(revisions_to_prune(&cs, &pods, &revisions, "web-h6", "web-h7").len(), 4);
}

#[test]
fn vct_hashes_gate_in_place() {
    let with = |hash: Option<&str>| {
        let mut r = revision_with("r", 1, json!({}));
        r.metadata.annotations =
            hash.map(|h| [(VCT_HASH_ANNOTATION.to_owned(), h.to_owned())].into());
        r
    };
    assert!(volume_claim_templates_allow_in_place(&with(None), &with(Some("x"))));
    assert!(volume_claim_templates_allow_in_place(&with(Some("x")), &with(None)));
    assert!(volume_claim_templates_allow_in_place(&with(Some("")), &with(Some(""))));
    assert!(!volume_claim_templates_allow_in_place(&with(Some("")), &with(Some("x"))));
}

#[test]
fn statefulset_revisions_hold_the_same_data_under_the_same_name_scheme() {
    // Upstream's Advanced StatefulSet builds its revision data as the CloneSet does (the
    // template, replaced whole), so a set with upstream's in-place fixture template gets the
    // revision upstream named `<set>-656c6d8895`, owned by the set, with its annotations and no
    // volume-claim-template hash.
    let set: kruise_api::apps::v1beta1::StatefulSet = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "StatefulSet",
        "metadata": {"name": "legacy", "namespace": "default", "uid": "u-1",
                     "annotations": {"note": "kept"}},
        "spec": {"template": defaulted_nginx_template("nginx:stable-alpine")}
    }))
    .expect("set");
    let revision = new_revision(&set, 1, 0).expect("revision");
    assert_eq!(revision.metadata.name.as_deref(), Some("legacy-656c6d8895"));
    let owner = &revision.metadata.owner_references.as_ref().expect("owner")[0];
    assert_eq!((owner.kind.as_str(), owner.controller), ("StatefulSet", Some(true)));
    let annotations = revision.metadata.annotations.expect("annotations");
    assert_eq!(annotations.get("note").map(String::as_str), Some("kept"));
    assert!(!annotations.contains_key(VCT_HASH_ANNOTATION));
}
