//! Unit tests, after upstream's pod mutating webhook tables (`sidecarset_test.go`,
//! `sidecarset_hotupgrade_test.go`, `sidecarset_resources_test.go`).

use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    ShareVolumePolicy, SidecarContainerUpgradeStrategy, SidecarSetInjectRevision, SidecarSetSpec,
    SourceContainerNameSource, TransferEnvVar,
};
use serde_json::json;

fn now() -> Timestamp {
    "2024-05-01T10:00:00Z".parse().expect("time")
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn container(name: &str, image: &str) -> Container {
    Container { name: name.into(), image: Some(image.into()), ..Default::default() }
}

fn sidecar(name: &str, image: &str) -> SidecarContainer {
    SidecarContainer { container: container(name, image), ..Default::default() }
}

fn sidecar_set(name: &str, containers: Vec<SidecarContainer>) -> SidecarSet {
    let mut s = SidecarSet::new(
        name,
        SidecarSetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(labels(&[("app", "nginx")])),
                ..Default::default()
            }),
            containers,
            ..Default::default()
        },
    );
    s.metadata.annotations = Some(labels(&[
        (annotations::SIDECARSET_HASH, &format!("{name}-hash")),
        (annotations::SIDECARSET_HASH_WITHOUT_IMAGE, &format!("{name}-hash-noimage")),
    ]));
    s
}

fn pod() -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("pod1".into()),
            namespace: Some("default".into()),
            labels: Some(labels(&[("app", "nginx")])),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            containers: vec![container("nginx", "nginx:1.15.1")],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn candidate(set: SidecarSet) -> SidecarSetCandidate {
    SidecarSetCandidate {
        sidecar_set: set.into(),
        revisions: Vec::new(),
        draw: 0.5,
        selectors: None,
    }
}

fn run(pod: &Pod, sets: Vec<SidecarSet>) -> Injection {
    run_with(pod, sets.into_iter().map(candidate).collect(), InjectionGates::default())
}

fn run_with(pod: &Pod, sets: Vec<SidecarSetCandidate>, gates: InjectionGates) -> Injection {
    inject(&InjectionInput {
        pod: pod.clone(),
        namespace_labels: Some(labels(&[("kubernetes.io/metadata.name", "default")])),
        sidecar_sets: sets,
        gates,
        now: now(),
    })
    .expect("injects")
}

fn names(containers: &[Container]) -> Vec<&str> {
    containers.iter().map(|c| c.name.as_str()).collect()
}

fn spec(pod: &Pod) -> &k8s_openapi::api::core::v1::PodSpec {
    pod.spec.as_ref().expect("spec")
}

fn note<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str)
}

fn env_of<'a>(c: &'a Container, name: &str) -> Option<&'a EnvVar> {
    c.env.iter().flatten().find(|e| e.name == name)
}

#[test]
fn pod_has_no_matched_sidecar_set() {
    let mut set = sidecar_set("sidecarset1", vec![sidecar("dns-f", "dns-f-image:1.0")]);
    set.spec.selector.as_mut().expect("selector").match_labels = Some(labels(&[("app", "other")]));
    let out = run(&pod(), vec![set]);
    assert!(!out.changed);
    assert_eq!(out.pod, pod());
    assert!(out.matched.is_empty());
}

#[test]
fn sidecar_containers_go_before_app_containers_by_default() {
    let mut after = sidecar("log-agent", "log:1");
    after.pod_inject_policy = Some(PodInjectPolicyType::AfterAppContainer);
    let set = sidecar_set("sidecarset1", vec![sidecar("dns-f", "dns-f-image:1.0"), after]);
    let out = run(&pod(), vec![set]);
    assert!(out.changed);
    assert_eq!(names(&spec(&out.pod).containers), ["dns-f", "nginx", "log-agent"]);
    let dns = &spec(&out.pod).containers[0];
    assert_eq!(
        env_of(dns, env::container::IS_INJECTED).and_then(|e| e.value.as_deref()),
        Some("true")
    );
    // The app container is untouched.
    assert_eq!(spec(&out.pod).containers[1], pod().spec.expect("spec").containers[0]);
}

#[test]
fn injection_strategy_paused_skips_the_sidecar_set() {
    let mut set = sidecar_set("sidecarset1", vec![sidecar("dns-f", "dns-f-image:1.0")]);
    set.spec.injection_strategy.paused = true;
    let out = run(&pod(), vec![set]);
    assert!(!out.changed);
}

#[test]
fn update_timestamps_are_whole_seconds_in_utc() {
    let set = sidecar_set("sidecarset1", vec![sidecar("dns-f", "dns-f-image:1.0")]);
    let out = inject_pod(
        &pod(),
        None,
        &[candidate(set)],
        InjectionGates::default(),
        "2024-05-01T10:00:00.987654321Z".parse().expect("time"),
    )
    .expect("injects");
    let hash: Value =
        serde_json::from_str(note(&out.pod, annotations::SIDECARSET_HASH).expect("hash"))
            .expect("json");
    assert_eq!(hash["sidecarset1"]["updateTimestamp"], "2024-05-01T10:00:00Z");
}

#[test]
fn hash_and_list_annotations_record_the_injection() {
    let mut set = sidecar_set("sidecarset1", vec![sidecar("dns-f", "dns-f-image:1.0")]);
    set.status = Some(kruise_api::apps::v1beta1::SidecarSetStatus {
        latest_revision: "sidecarset1-abc".into(),
        ..Default::default()
    });
    let out = run(&pod(), vec![set]);
    let hash: Value =
        serde_json::from_str(note(&out.pod, annotations::SIDECARSET_HASH).expect("hash"))
            .expect("json");
    assert_eq!(
        hash,
        json!({"sidecarset1": {
            "updateTimestamp": "2024-05-01T10:00:00Z",
            "hash": "sidecarset1-hash",
            "sidecarSetName": "sidecarset1",
            "sidecarList": ["dns-f"],
            "controllerRevision": "sidecarset1-abc",
        }})
    );
    let no_image: Value = serde_json::from_str(
        note(&out.pod, annotations::SIDECARSET_HASH_WITHOUT_IMAGE).expect("hash"),
    )
    .expect("json");
    assert_eq!(no_image["sidecarset1"]["hash"], "sidecarset1-hash-noimage");
    assert!(no_image["sidecarset1"].get("controllerRevision").is_none());
    assert_eq!(note(&out.pod, annotations::SIDECARSET_INJECTED_LIST), Some("sidecarset1"));
}

#[test]
fn without_a_hash_annotation_our_own_hash_is_used() {
    let mut set = sidecar_set("s", vec![sidecar("dns-f", "dns-f-image:1.0")]);
    set.metadata.annotations = None;
    let out = run(&pod(), vec![set.clone()]);
    assert_eq!(pod_sidecar_set_hash(&out.pod, "s"), sidecar_set_hash(&set.spec));
}

#[test]
fn older_hash_annotations_are_read_and_kept() {
    let mut p = pod();
    p.metadata.annotations = Some(labels(&[
        (annotations::SIDECARSET_HASH, r#"{"old-set":"h1"}"#),
        (annotations::SIDECARSET_INJECTED_LIST, "old-set"),
    ]));
    let out = run(&p, vec![sidecar_set("sidecarset1", vec![sidecar("dns-f", "img")])]);
    let hash: Value =
        serde_json::from_str(note(&out.pod, annotations::SIDECARSET_HASH).expect("hash"))
            .expect("json");
    assert_eq!(hash["old-set"]["hash"], "h1");
    assert_eq!(hash["old-set"]["sidecarSetName"], "old-set");
    assert_eq!(hash["sidecarset1"]["hash"], "sidecarset1-hash");
    assert_eq!(note(&out.pod, annotations::SIDECARSET_INJECTED_LIST), Some("old-set,sidecarset1"));
    // A value that is neither form is refused, naming the annotation.
    p.metadata.annotations = Some(labels(&[(annotations::SIDECARSET_HASH, "[1]")]));
    let err = inject(&InjectionInput {
        pod: p,
        namespace_labels: None,
        sidecar_sets: vec![candidate(sidecar_set("sidecarset1", vec![sidecar("dns-f", "img")]))],
        gates: InjectionGates::default(),
        now: now(),
    })
    .expect_err("bad annotation");
    assert!(err.to_string().contains(annotations::SIDECARSET_HASH), "{err}");
}

#[test]
fn image_pull_secrets_are_merged_without_duplicates() {
    let mut p = pod();
    p.spec.as_mut().expect("spec").image_pull_secrets = Some(vec![
        LocalObjectReference { name: "pod-secret".into() },
        LocalObjectReference { name: "shared".into() },
        // A repeat in the pod itself goes too, as upstream's merge drops it.
        LocalObjectReference { name: "pod-secret".into() },
    ]);
    let mut set = sidecar_set("sidecarset1", vec![sidecar("dns-f", "img")]);
    set.spec.image_pull_secrets = vec![
        LocalObjectReference { name: "shared".into() },
        LocalObjectReference { name: "sidecar-secret".into() },
    ];
    let out = run(&p, vec![set]);
    let secrets: Vec<&str> =
        spec(&out.pod).image_pull_secrets.iter().flatten().map(|s| s.name.as_str()).collect();
    assert_eq!(secrets, ["pod-secret", "shared", "sidecar-secret"]);
}

#[test]
fn patch_pod_metadata_policies() {
    let mut p = pod();
    p.metadata.annotations = Some(labels(&[
        ("retained", "pod"),
        ("overwritten", "pod"),
        ("merged", r#"{"a":"pod","b":"pod"}"#),
    ]));
    let mut set = sidecar_set("sidecarset1", vec![sidecar("dns-f", "img")]);
    set.spec.patch_pod_metadata = vec![
        SidecarSetPatchPodMetadata {
            annotations: labels(&[("retained", "set"), ("added", "set")]),
            patch_policy: Some(SidecarSetPatchPolicyType::Retain),
        },
        SidecarSetPatchPodMetadata {
            annotations: labels(&[("overwritten", "set")]),
            patch_policy: Some(SidecarSetPatchPolicyType::Overwrite),
        },
        SidecarSetPatchPodMetadata {
            annotations: labels(&[("merged", r#"{"b":"set","c":"set"}"#)]),
            patch_policy: Some(SidecarSetPatchPolicyType::MergePatchJson),
        },
    ];
    let out = run(&p, vec![set.clone()]);
    assert_eq!(note(&out.pod, "retained"), Some("pod"));
    assert_eq!(note(&out.pod, "added"), Some("set"));
    assert_eq!(note(&out.pod, "overwritten"), Some("set"));
    assert_eq!(note(&out.pod, "merged"), Some(r#"{"a":"pod","b":"set","c":"set"}"#));
    // A pod value that is not JSON cannot be merged.
    p.metadata.annotations = Some(labels(&[("merged", "not json")]));
    let err = inject(&InjectionInput {
        pod: p,
        namespace_labels: None,
        sidecar_sets: vec![candidate(set)],
        gates: InjectionGates::default(),
        now: now(),
    })
    .expect_err("bad json");
    assert!(
        matches!(err, InjectionError::PatchMetadata { ref key, .. } if key == "merged"),
        "{err}"
    );
}

fn revision(
    name: &str,
    set: &str,
    custom_version: Option<&str>,
    number: i64,
    image: &str,
) -> ControllerRevision {
    let mut l = labels(&[(labels::SIDECARSET_NAME, set)]);
    if let Some(v) = custom_version {
        l.insert(labels::SIDECARSET_CUSTOM_VERSION.into(), v.into());
    }
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(l),
            annotations: Some(labels(&[(annotations::SIDECARSET_HASH, &format!("{name}-hash"))])),
            ..Default::default()
        },
        data: RawExtension(
            json!({"spec": {"$patch": "replace", "containers": [{"name": "sidecar", "image": image}]}}),
        ),
        revision: Some(number),
    }
}

fn pinned_set(policy: Option<SidecarSetInjectRevisionPolicy>) -> SidecarSet {
    let mut set = sidecar_set("sidecarset1", vec![sidecar("sidecar", "sidecar-image:canary")]);
    set.spec.injection_strategy.revision = Some(SidecarSetInjectRevision {
        custom_version: Some("stable".into()),
        revision_name: None,
        policy,
    });
    set
}

#[test]
fn injection_strategy_revision_injects_the_pinned_revision() {
    let set = pinned_set(None);
    let revisions = vec![
        revision("sidecarset1-old", "sidecarset1", Some("stable"), 1, "sidecar-image:older"),
        revision("sidecarset1-stable", "sidecarset1", Some("stable"), 2, "sidecar-image:stable"),
        revision("other-set", "other", Some("stable"), 3, "wrong"),
    ];
    let cand = SidecarSetCandidate {
        sidecar_set: set.clone().into(),
        revisions: revisions.clone(),
        draw: 0.5,
        selectors: None,
    };
    let out = run_with(&pod(), vec![cand], InjectionGates::default());
    let sidecar = &spec(&out.pod).containers[0];
    assert_eq!(sidecar.image.as_deref(), Some("sidecar-image:stable"));
    let hash: Value =
        serde_json::from_str(note(&out.pod, annotations::SIDECARSET_HASH).expect("hash"))
            .expect("json");
    assert_eq!(hash["sidecarset1"]["hash"], "sidecarset1-stable-hash");
    assert_eq!(hash["sidecarset1"]["controllerRevision"], "sidecarset1-stable");

    // By name.
    let mut by_name = set.clone();
    by_name.spec.injection_strategy.revision = Some(SidecarSetInjectRevision {
        revision_name: Some("sidecarset1-old".into()),
        ..Default::default()
    });
    let cand =
        SidecarSetCandidate { sidecar_set: by_name.into(), revisions, draw: 0.5, selectors: None };
    let out = run_with(&pod(), vec![cand], InjectionGates::default());
    assert_eq!(spec(&out.pod).containers[0].image.as_deref(), Some("sidecar-image:older"));

    // No such revision: the pod is refused.
    let err = inject(&InjectionInput {
        pod: pod(),
        namespace_labels: None,
        sidecar_sets: vec![candidate(set)],
        gates: InjectionGates::default(),
        now: now(),
    })
    .expect_err("no history");
    assert!(matches!(err, InjectionError::RevisionNotFound { .. }), "{err}");
}

/// Upstream's `TestCanarySidecarSetInjection` table: policy Partial with an update selector.
#[test]
fn partial_revision_policy() {
    let revisions = vec![revision(
        "sidecarset1-12345",
        "sidecarset1",
        Some("stable"),
        1,
        "sidecar-image:stable",
    )];
    let mut canary_pod = pod();
    canary_pod.metadata.labels.as_mut().expect("labels").insert("canary".into(), "true".into());
    let base = || {
        let mut s = pinned_set(Some(SidecarSetInjectRevisionPolicy::Partial));
        s.spec.update_strategy.selector = Some(LabelSelector {
            match_labels: Some(labels(&[("canary", "true")])),
            ..Default::default()
        });
        s
    };
    let image = |p: &Pod, s: SidecarSet, draw: f64| -> Result<String, InjectionError> {
        let cand = SidecarSetCandidate {
            sidecar_set: s.into(),
            revisions: revisions.clone(),
            draw,
            selectors: None,
        };
        let out = inject_pod(p, None, &[cand], InjectionGates::default(), now())?;
        Ok(spec(&out.pod).containers[0].image.clone().unwrap_or_default())
    };
    let with_partition = |text: &str| {
        let mut s = base();
        s.spec.update_strategy.partition = Some(IntOrString::String(text.into()));
        s
    };
    assert_eq!(image(&pod(), base(), 0.5).expect("stable pod"), "sidecar-image:stable");
    assert_eq!(image(&canary_pod, base(), 0.5).expect("canary"), "sidecar-image:canary");
    assert_eq!(
        image(&canary_pod, with_partition("100%"), 0.99).expect("100%"),
        "sidecar-image:stable"
    );
    assert_eq!(image(&canary_pod, with_partition("0%"), 0.01).expect("0%"), "sidecar-image:canary");
    assert_eq!(
        image(&canary_pod, with_partition("40%"), 0.3).expect("40%"),
        "sidecar-image:stable"
    );
    assert_eq!(
        image(&canary_pod, with_partition("40%"), 0.5).expect("40%"),
        "sidecar-image:canary"
    );
    assert!(matches!(
        image(&canary_pod, with_partition("abc%"), 0.5),
        Err(InjectionError::InvalidPartition { .. })
    ));
    let mut bad_selector = base();
    bad_selector.spec.update_strategy.selector = Some(LabelSelector {
        match_expressions: Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement {
                key: "somekey".into(),
                operator: "badOp".into(),
                values: None,
            },
        ]),
        ..Default::default()
    });
    assert!(matches!(
        image(&canary_pod, bad_selector, 0.5),
        Err(InjectionError::InvalidSelector { .. })
    ));
    let mut paused = with_partition("0%");
    paused.spec.update_strategy.paused = true;
    assert_eq!(image(&canary_pod, paused, 0.01).expect("paused"), "sidecar-image:stable");
}

#[test]
fn a_canary_sidecar_set_replaces_its_base() {
    let base = sidecar_set("base", vec![sidecar("mesh", "mesh:1")]);
    let mut canary = sidecar_set("canary", vec![sidecar("mesh", "mesh:2")]);
    canary.metadata.annotations.as_mut().expect("notes").extend(labels(&[
        (annotations::SIDECARSET_CANARY, "true"),
        (annotations::SIDECARSET_BASE, "base"),
    ]));
    let out = run(&pod(), vec![base.clone(), canary.clone()]);
    assert_eq!(out.matched, ["canary"]);
    assert_eq!(spec(&out.pod).containers[0].image.as_deref(), Some("mesh:2"));
    // A canary that does not select the pod leaves the base in charge.
    canary.spec.selector.as_mut().expect("selector").match_labels =
        Some(labels(&[("app", "nginx"), ("canary", "true")]));
    let out = run(&pod(), vec![base, canary]);
    assert_eq!(out.matched, ["base"]);
    assert_eq!(spec(&out.pod).containers[0].image.as_deref(), Some("mesh:1"));
}

#[test]
fn two_sidecar_sets_with_the_same_container_name_are_refused() {
    let a = sidecar_set("set-a", vec![sidecar("mesh", "mesh:1")]);
    let b = sidecar_set("set-b", vec![sidecar("mesh", "mesh:2")]);
    let err =
        inject_pod(&pod(), None, &[candidate(b), candidate(a)], InjectionGates::default(), now())
            .expect_err("conflict");
    assert_eq!(
        err.to_string(),
        "container mesh would be injected by both sidecarSet set-a and sidecarSet set-b"
    );
}

#[test]
fn sidecar_volumes_are_appended_and_the_pods_own_win() {
    let mut p = pod();
    p.spec.as_mut().expect("spec").volumes =
        Some(vec![Volume { name: "shared".into(), ..Default::default() }]);
    let mut c = sidecar("dns-f", "img");
    c.container.volume_mounts = Some(vec![
        VolumeMount { name: "shared".into(), mount_path: "/a".into(), ..Default::default() },
        VolumeMount { name: "own".into(), mount_path: "/b".into(), ..Default::default() },
    ]);
    let mut set = sidecar_set("sidecarset1", vec![c]);
    set.spec.volumes = vec![
        Volume { name: "shared".into(), empty_dir: Some(Default::default()), ..Default::default() },
        Volume { name: "own".into(), ..Default::default() },
        Volume { name: "unused".into(), ..Default::default() },
    ];
    let out = run(&p, vec![set]);
    let vols = spec(&out.pod).volumes.clone().expect("volumes");
    assert_eq!(vols.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), ["shared", "own"]);
    assert_eq!(vols[0].empty_dir, None, "the pod's own volume wins");
}

#[test]
fn share_volume_policy_mounts_app_volumes_with_their_subpath_env() {
    let mut p = pod();
    let app = &mut p.spec.as_mut().expect("spec").containers[0];
    app.env = Some(vec![env_var("POD_NAME", "x"), env_var("OTHER", "y")]);
    app.volume_mounts = Some(vec![
        VolumeMount {
            name: "logs".into(),
            mount_path: "/var/log".into(),
            sub_path_expr: Some("foo/$(POD_NAME)".into()),
            ..Default::default()
        },
        VolumeMount { name: "data".into(), mount_path: "/data".into(), ..Default::default() },
    ]);
    let mut c = sidecar("log-agent", "img");
    c.share_volume_policy = ShareVolumePolicy { type_: Some(ShareVolumePolicyType::Enabled) };
    c.container.volume_mounts = Some(vec![VolumeMount {
        name: "own".into(),
        mount_path: "/data".into(),
        ..Default::default()
    }]);
    let out = run(&p, vec![sidecar_set("sidecarset1", vec![c])]);
    let agent = &spec(&out.pod).containers[0];
    let mounts: Vec<&str> = agent.volume_mounts.iter().flatten().map(|m| m.name.as_str()).collect();
    assert_eq!(mounts, ["own", "logs"], "a mount path the sidecar uses is not shared again");
    assert_eq!(env_of(agent, "POD_NAME").and_then(|e| e.value.as_deref()), Some("x"));
    assert!(env_of(agent, "OTHER").is_none());
}

#[test]
fn share_volume_device_policy_copies_app_devices() {
    let mut p = pod();
    p.spec.as_mut().expect("spec").containers[0].volume_devices =
        Some(vec![VolumeDevice { name: "block".into(), device_path: "/dev/xvda".into() }]);
    let mut shared = sidecar("shared", "img");
    shared.share_volume_device_policy =
        Some(ShareVolumePolicy { type_: Some(ShareVolumePolicyType::Enabled) });
    let plain = sidecar("plain", "img");
    let out = run(&p, vec![sidecar_set("sidecarset1", vec![shared, plain])]);
    let by_name =
        |n: &str| spec(&out.pod).containers.iter().find(|c| c.name == n).cloned().expect("c");
    assert_eq!(by_name("shared").volume_devices.expect("devices")[0].device_path, "/dev/xvda");
    assert_eq!(by_name("plain").volume_devices, None);
}

#[test]
fn transfer_env_copies_from_a_named_or_referenced_container() {
    let mut p = pod();
    {
        let s = p.spec.as_mut().expect("spec");
        s.containers[0].env = Some(vec![env_var("TZ", "Asia/Shanghai"), env_var("LANG", "C")]);
        let mut other = container("java", "java");
        other.env = Some(vec![env_var("JAVA_HOME", "/jdk")]);
        s.containers.push(other);
    }
    p.metadata.annotations = Some(labels(&[("main-container", "java")]));
    let mut c = sidecar("dns-f", "img");
    c.container.env = Some(vec![env_var("LANG", "sidecar")]);
    c.transfer_env = vec![
        TransferEnvVar {
            source_container_name: "nginx".into(),
            env_names: vec!["TZ".into(), "LANG".into(), "MISSING".into()],
            ..Default::default()
        },
        TransferEnvVar {
            source_container_name_from: Some(SourceContainerNameSource {
                field_ref: Some(ObjectFieldSelector {
                    api_version: Some("v1".into()),
                    field_path: "metadata.annotations['main-container']".into(),
                }),
            }),
            env_name: "JAVA_HOME".into(),
            ..Default::default()
        },
    ];
    let out = run(&p, vec![sidecar_set("sidecarset1", vec![c])]);
    let dns = &spec(&out.pod).containers[0];
    let envs: Vec<(&str, &str)> = dns
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.as_str(), e.value.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(
        envs,
        [
            ("LANG", "sidecar"),
            ("IS_INJECTED", "true"),
            ("TZ", "Asia/Shanghai"),
            ("JAVA_HOME", "/jdk")
        ]
    );
}

#[test]
fn init_containers_are_sorted_by_name_and_containers_only_behind_the_gate() {
    let mut p = pod();
    p.spec.as_mut().expect("spec").init_containers = Some(vec![container("pod-init", "i")]);
    let mut set = sidecar_set("sidecarset1", vec![sidecar("zz", "img"), sidecar("aa", "img")]);
    let mut native = sidecar("native", "img");
    native.container.restart_policy = Some("Always".into());
    set.spec.init_containers = vec![sidecar("init-b", "img"), native, sidecar("init-a", "img")];
    let out = run(&p, vec![set.clone()]);
    let s = spec(&out.pod);
    assert_eq!(
        names(s.init_containers.as_deref().expect("init")),
        ["pod-init", "init-a", "init-b", "native"]
    );
    assert_eq!(names(&s.containers), ["zz", "aa", "nginx"]);
    let hash: Value =
        serde_json::from_str(note(&out.pod, annotations::SIDECARSET_HASH).expect("hash"))
            .expect("json");
    assert_eq!(hash["sidecarset1"]["sidecarList"], json!(["aa", "native", "zz"]));
    let gated =
        run_with(&p, vec![candidate(set)], InjectionGates { sort_sidecar_container_by_name: true });
    assert_eq!(names(&spec(&gated.pod).containers), ["aa", "zz", "nginx"]);
}

#[test]
fn hot_upgrade_injects_a_pair_with_version_annotations() {
    let mut c = sidecar("mesh", "mesh:1");
    c.upgrade_strategy = SidecarContainerUpgradeStrategy {
        upgrade_type: Some(SidecarContainerUpgradeType::HotUpgrade),
        hot_upgrade_empty_image: "mesh-empty:1".into(),
    };
    let set = sidecar_set("sidecarset1", vec![c]);
    let out = run(&pod(), vec![set.clone()]);
    let s = spec(&out.pod);
    assert_eq!(names(&s.containers), ["mesh-1", "mesh-2", "nginx"]);
    assert_eq!(s.containers[0].image.as_deref(), Some("mesh:1"));
    assert_eq!(s.containers[1].image.as_deref(), Some("mesh-empty:1"));
    let version = env_of(&s.containers[1], env::container::SIDECARSET_VERSION).expect("env");
    assert_eq!(
        version
            .value_from
            .as_ref()
            .and_then(|v| v.field_ref.as_ref())
            .map(|f| f.field_path.as_str()),
        Some("metadata.annotations['version.sidecarset.kruise.io/mesh-2']")
    );
    assert!(env_of(&s.containers[0], env::container::SIDECARSET_VERSION_ALT).is_some());
    assert_eq!(note(&out.pod, "version.sidecarset.kruise.io/mesh-1"), Some("1"));
    assert_eq!(note(&out.pod, "versionalt.sidecarset.kruise.io/mesh-1"), Some("0"));
    assert_eq!(note(&out.pod, "version.sidecarset.kruise.io/mesh-2"), Some("0"));
    assert_eq!(note(&out.pod, "versionalt.sidecarset.kruise.io/mesh-2"), Some("1"));
    assert_eq!(
        note(&out.pod, annotations::SIDECARSET_WORKING_HOTUPGRADE_CONTAINER),
        Some(r#"{"mesh":"mesh-1"}"#)
    );
    let hash: Value =
        serde_json::from_str(note(&out.pod, annotations::SIDECARSET_HASH).expect("hash"))
            .expect("json");
    assert_eq!(hash["sidecarset1"]["sidecarList"], json!(["mesh"]));
    // Injecting again changes nothing.
    let again = run(&out.pod, vec![set]);
    assert!(!again.changed);
}

#[test]
fn injecting_an_injected_pod_changes_nothing() {
    let set = sidecar_set("sidecarset1", vec![sidecar("dns-f", "img")]);
    let once = run(&pod(), vec![set.clone()]);
    let later = inject_pod(
        &once.pod,
        None,
        &[candidate(set)],
        InjectionGates::default(),
        "2025-01-01T00:00:00Z".parse().expect("time"),
    )
    .expect("injects");
    assert!(!later.changed);
    assert_eq!(later.pod, once.pod);
}

#[test]
fn namespace_selector_needs_the_namespace_labels() {
    let mut set = sidecar_set("sidecarset1", vec![sidecar("dns-f", "img")]);
    set.spec.namespace_selector =
        Some(LabelSelector { match_labels: Some(labels(&[("team", "a")])), ..Default::default() });
    let cand = [candidate(set)];
    let in_ns = |ns: Option<BTreeMap<String, String>>| {
        inject_pod(&pod(), ns.as_ref(), &cand, InjectionGates::default(), now())
            .expect("ok")
            .changed
    };
    assert!(in_ns(Some(labels(&[("team", "a")]))));
    assert!(!in_ns(Some(labels(&[("team", "b")]))));
    assert!(!in_ns(None));
}

#[test]
fn finished_or_deleted_pods_are_left_alone() {
    let set = sidecar_set("sidecarset1", vec![sidecar("dns-f", "img")]);
    let mut p = pod();
    p.status = Some(k8s_openapi::api::core::v1::PodStatus {
        phase: Some("Succeeded".into()),
        ..Default::default()
    });
    assert!(!run(&p, vec![set.clone()]).changed);
    let mut p = pod();
    p.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now()));
    assert!(!run(&p, vec![set]).changed);
}

#[test]
fn resources_policy_is_applied_and_refuses_pods_without_targets() {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;
    use kruise_api::apps::v1beta1::{
        ResourceExprLimits, ResourcesExpr, ResourcesPolicy, TargetContainersModeType,
    };
    let mut p = pod();
    p.spec.as_mut().expect("spec").containers[0].resources =
        Some(k8s_openapi::api::core::v1::ResourceRequirements {
            limits: Some([("cpu".to_owned(), Q("2".into()))].into()),
            ..Default::default()
        });
    let mut c = sidecar("dns-f", "img");
    c.resources_policy = Some(ResourcesPolicy {
        target_containers_mode: TargetContainersModeType::Sum,
        target_containers_name_regex: "^nginx$".into(),
        resources_expr: ResourcesExpr {
            limits: Some(ResourceExprLimits {
                cpu: "max(cpu*10%, 300m)".into(),
                memory: String::new(),
            }),
            requests: None,
        },
    });
    let set = sidecar_set("sidecarset1", vec![c]);
    let out = run(&p, vec![set.clone()]);
    let limits =
        spec(&out.pod).containers[0].resources.clone().and_then(|r| r.limits).expect("limits");
    assert_eq!(limits["cpu"].0, "300m");
    let mut other = set;
    other.spec.containers[0]
        .resources_policy
        .as_mut()
        .expect("policy")
        .target_containers_name_regex = "^db$".into();
    let err = inject_pod(&p, None, &[candidate(other.clone())], InjectionGates::default(), now())
        .expect_err("no target");
    assert_eq!(
        err.to_string(),
        "sidecarSet sidecarset1: spec.containers[0].resourcesPolicy: no containers match the regex pattern \"^db$\""
    );
    // In place, a refused injection leaves the pod as it was, metadata patches included.
    other.spec.patch_pod_metadata = vec![SidecarSetPatchPodMetadata {
        annotations: labels(&[("added", "set")]),
        patch_policy: Some(SidecarSetPatchPolicyType::Overwrite),
    }];
    let mut in_place = p.clone();
    let refused = super::inject_in_place(
        &mut in_place,
        None,
        &[candidate(other)],
        InjectionGates::default(),
        now(),
    );
    assert!(refused.is_err());
    assert_eq!(in_place, p);
}

#[test]
fn json_patch_turns_the_original_into_the_injected_pod() {
    let out = run(&pod(), vec![sidecar_set("sidecarset1", vec![sidecar("dns-f", "img")])]);
    let patch = out.json_patch(&pod());
    let mut doc = serde_json::to_value(pod()).expect("json");
    json_patch::patch(&mut doc, &patch).expect("applies");
    assert_eq!(doc, serde_json::to_value(&out.pod).expect("json"));
}

#[test]
fn the_index_returns_what_a_full_scan_returns() {
    let mut ns_pinned = sidecar_set("pinned", vec![sidecar("a", "img")]);
    ns_pinned.spec.namespace_selector = Some(LabelSelector {
        match_labels: Some(labels(&[("kubernetes.io/metadata.name", "prod")])),
        ..Default::default()
    });
    let mut by_expr = sidecar_set("by-expr", vec![sidecar("b", "img")]);
    by_expr.spec.selector = Some(LabelSelector {
        match_expressions: Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement {
                key: "app".into(),
                operator: "Exists".into(),
                values: None,
            },
        ]),
        ..Default::default()
    });
    let other = {
        let mut s = sidecar_set("other", vec![sidecar("c", "img")]);
        s.spec.selector.as_mut().expect("sel").match_labels = Some(labels(&[("app", "db")]));
        s
    };
    let plain = sidecar_set("plain", vec![sidecar("d", "img")]);
    let sets = vec![ns_pinned, by_expr, other, plain];
    let index = SidecarSetIndex::new(sets.clone());
    for ns in ["default", "prod"] {
        let ns_labels = labels(&[("kubernetes.io/metadata.name", ns)]);
        for pod_labels in [labels(&[("app", "nginx")]), labels(&[("app", "db")]), labels(&[])] {
            let scan: Vec<&str> = sets
                .iter()
                .filter(|s| {
                    matching::pod_matches(s, &pod_labels, Some(&ns_labels)).unwrap_or(false)
                })
                .filter_map(|s| s.metadata.name.as_deref())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let found: Vec<&str> = index
                .matching(ns, &pod_labels, Some(&ns_labels))
                .into_iter()
                .filter_map(|s| s.metadata.name.as_deref())
                .collect();
            assert_eq!(found, scan, "{ns} {pod_labels:?}");
        }
    }
    let mut index = index;
    assert!(index.remove("plain").is_some());
    assert_eq!(index.len(), 3);
}

#[test]
fn a_v1alpha1_namespace_selects_through_its_conversion() {
    use kruise_api::apps::v1alpha1 as alpha;
    let mut old = alpha::SidecarSet::new(
        "legacy",
        alpha::SidecarSetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(labels(&[("app", "nginx")])),
                ..Default::default()
            }),
            namespace: "shop".into(),
            containers: vec![sidecar("agent", "agent:1")],
            ..Default::default()
        },
    );
    old.metadata.resource_version = Some("1".into());
    let set = kruise_api::conversion::to_hub(old).expect("converts");
    let cand = [candidate(set.clone())];
    let in_ns = |ns: &str| {
        let ns_labels = labels(&[("kubernetes.io/metadata.name", ns)]);
        inject_pod(&pod(), Some(&ns_labels), &cand, InjectionGates::default(), now())
            .expect("ok")
            .changed
    };
    assert!(in_ns("shop"));
    assert!(!in_ns("default"));
    // The index files it under its namespace.
    let index = SidecarSetIndex::new([set]);
    assert_eq!(index.candidates("shop", &labels(&[("app", "nginx")])).len(), 1);
    assert!(index.candidates("default", &labels(&[("app", "nginx")])).is_empty());
}
