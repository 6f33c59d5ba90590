//! After upstream's `sidecarset_validating_test.go` and `sidecarset_resources_policy_test.go`.

use super::*;
use k8s_openapi::api::core::v1::{ObjectFieldSelector, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
use kruise_api::apps::v1beta1::{
    ResourceExprLimits, ResourcesExpr, SidecarContainerUpgradeStrategy, SidecarSetInjectRevision,
    SidecarSetPatchPodMetadata, SidecarSetSpec, SourceContainerNameSource,
    TargetContainersModeType,
};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn sidecar(name: &str) -> SidecarContainer {
    SidecarContainer {
        container: Container {
            name: name.into(),
            image: Some("busybox".into()),
            ..Default::default()
        },
        pod_inject_policy: Some(PodInjectPolicyType::BeforeAppContainer),
        ..Default::default()
    }
}

fn valid(name: &str) -> SidecarSet {
    SidecarSet::new(
        name,
        SidecarSetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(labels(&[("app", "nginx")])),
                ..Default::default()
            }),
            containers: vec![sidecar("dns-f")],
            update_strategy: SidecarSetUpdateStrategy {
                type_: Some(SidecarSetUpdateStrategyType::RollingUpdate),
                max_unavailable: Some(IntOrString::Int(1)),
                partition: Some(IntOrString::Int(0)),
                ..Default::default()
            },
            ..Default::default()
        },
    )
}

fn check(obj: &SidecarSet, old: Option<&SidecarSet>, others: &[SidecarSet]) -> Vec<String> {
    let ctx = SidecarSetContext { others, ..Default::default() };
    validate_sidecar_set(obj, old, &ctx).messages()
}

fn fields(obj: &SidecarSet) -> Vec<String> {
    let ctx = SidecarSetContext::default();
    validate_sidecar_set(obj, None, &ctx).iter().map(|e| e.path.to_string()).collect()
}

#[test]
fn a_valid_sidecar_set_passes() {
    assert_eq!(check(&valid("s"), None, &[]), Vec::<String>::new());
}

#[test]
fn bad_names_are_refused() {
    let errs = check(&valid("bad_name"), None, &[]);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with(
            "metadata.name: Invalid value: \"bad_name\": sidecarset name must consist"
        ),
        "{errs:?}"
    );
    let long = "a".repeat(64);
    assert_eq!(
        check(&valid(&long), None, &[]),
        ["metadata.name: Invalid value: \"".to_owned()
            + &long
            + "\": must be no more than 63 characters"]
    );
}

#[test]
fn selector_rules() {
    let mut s = valid("s");
    s.spec.selector = None;
    assert_eq!(
        check(&s, None, &[]),
        ["spec.selector: Required value: no selector defined for SidecarSet"]
    );
    s.spec.selector = Some(LabelSelector::default());
    assert_eq!(fields(&s), ["spec.selector"]);
    s.spec.selector = Some(LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "app".into(),
            operator: "Bad".into(),
            values: None,
        }]),
        ..Default::default()
    });
    assert_eq!(
        fields(&s),
        ["spec.selector.matchExpressions[0].operator", "spec.selector.selector"]
    );
    let mut s = valid("s");
    s.spec.namespace_selector = Some(LabelSelector::default());
    assert_eq!(fields(&s), ["spec.namespaceSelector"]);
}

#[test]
fn update_strategy_rules() {
    let mut s = valid("s");
    s.spec.update_strategy.partition = Some(IntOrString::String("50%".into()));
    s.spec.update_strategy.selector = Some(LabelSelector {
        match_labels: Some(labels(&[("canary", "true")])),
        ..Default::default()
    });
    assert_eq!(fields(&s), ["spec.updateStrategy"]);
    let mut s = valid("s");
    s.spec.update_strategy.partition = Some(IntOrString::Int(-1));
    s.spec.update_strategy.max_unavailable = Some(IntOrString::String("x".into()));
    assert_eq!(fields(&s), ["spec.updateStrategy.partition", "spec.updateStrategy.maxUnavailable"]);
    // NotUpdate skips these checks.
    s.spec.update_strategy.type_ = Some(SidecarSetUpdateStrategyType::NotUpdate);
    assert_eq!(fields(&s), Vec::<String>::new());
}

#[test]
fn containers_are_required_and_must_form_a_valid_pod() {
    let mut s = valid("s");
    s.spec.containers.clear();
    assert_eq!(
        check(&s, None, &[]),
        ["spec: Required value: no initContainer or container defined for SidecarSet"]
    );
    let mut s = valid("s");
    s.spec.containers.push(sidecar("dns-f"));
    assert_eq!(fields(&s), ["spec.containers[1].name"]);
    let mut s = valid("s");
    s.spec.containers[0].container.image = None;
    assert_eq!(fields(&s), ["spec.containers[0].image"]);
}

#[test]
fn unknown_policies_are_refused() {
    let mut s = valid("s");
    s.spec.containers[0].pod_inject_policy = Some(PodInjectPolicyType::Other("Middle".into()));
    s.spec.containers[0].share_volume_policy.type_ =
        Some(ShareVolumePolicyType::Other("maybe".into()));
    assert_eq!(
        fields(&s),
        ["spec.containers[0].podInjectPolicy", "spec.containers[0].shareVolumePolicy"]
    );
}

#[test]
fn native_sidecar_init_containers_cannot_roll() {
    let mut s = valid("s");
    let mut init = sidecar("init");
    init.container.restart_policy = Some("Always".into());
    s.spec.init_containers.push(init);
    assert_eq!(
        check(&s, None, &[]),
        [
            "spec.updateStrategy: Required value: The initContainer in-place upgrade is not currently supported."
        ]
    );
    s.spec.update_strategy.type_ = Some(SidecarSetUpdateStrategyType::NotUpdate);
    assert_eq!(check(&s, None, &[]), Vec::<String>::new());
}

#[test]
fn transfer_env_field_refs() {
    let mut s = valid("s");
    let from = |api: Option<&str>, path: &str| TransferEnvVar {
        source_container_name_from: Some(SourceContainerNameSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: api.map(str::to_owned),
                field_path: path.into(),
            }),
        }),
        env_name: "X".into(),
        ..Default::default()
    };
    s.spec.containers[0].transfer_env = vec![
        from(Some("v1"), "metadata.labels['app']"),
        from(None, "metadata.labels['app']"),
        from(Some("v1"), "spec.nodeName"),
        from(Some("v1"), "metadata.labels['bad key']"),
    ];
    assert_eq!(
        fields(&s),
        [
            "spec.containers[0].transferEnv.fieldRef.apiVersion",
            "spec.containers[0].transferEnv.fieldRef.fieldPath",
            "spec.containers[0].transferEnv.fieldRef",
        ]
    );
}

fn with_policy(regex: &str, cpu: &str) -> SidecarSet {
    let mut s = valid("s");
    s.spec.containers[0].resources_policy = Some(ResourcesPolicy {
        target_containers_mode: TargetContainersModeType::Sum,
        target_containers_name_regex: regex.into(),
        resources_expr: ResourcesExpr {
            limits: Some(ResourceExprLimits { cpu: cpu.into(), memory: String::new() }),
            requests: None,
        },
    });
    s
}

#[test]
fn resources_policy_rules_name_the_field() {
    assert_eq!(check(&with_policy("^app$", "max(cpu*50%, 50m)"), None, &[]), Vec::<String>::new());
    let errs = check(&with_policy("([", "cpu"), None, &[]);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with("spec.containers[0].resourcesPolicy.targetContainersNameRegex: Invalid value: \"([\": invalid regex pattern"),
        "{errs:?}"
    );
    assert_eq!(
        check(&with_policy("", "cpu"), None, &[]),
        [
            "spec.containers[0].resourcesPolicy.targetContainersNameRegex: Required value: invalid empty regex"
        ]
    );
    let errs = check(&with_policy(".*", "cpu * * 2"), None, &[]);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with("spec.containers[0].resourcesPolicy.resourcesExpr.limits.cpu: Invalid value: \"cpu * * 2\": invalid expression"),
        "{errs:?}"
    );
    let mut both = with_policy(".*", "cpu");
    both.spec.containers[0].container.resources =
        Some(k8s_openapi::api::core::v1::ResourceRequirements {
            limits: Some(
                [(
                    "cpu".to_owned(),
                    k8s_openapi::apimachinery::pkg::api::resource::Quantity("1".into()),
                )]
                .into(),
            ),
            ..Default::default()
        });
    let errs = check(&both, None, &[]);
    assert!(
        errs[0].ends_with("resourcesPolicy and resources cannot be configured together"),
        "{errs:?}"
    );
    let mut empty = with_policy(".*", "cpu");
    empty.spec.containers[0].resources_policy.as_mut().expect("policy").resources_expr =
        ResourcesExpr::default();
    assert_eq!(fields(&empty), ["spec.containers[0].resourcesPolicy.resourcesExpr"]);
    // On an init container, only a native sidecar may have one.
    let mut init = with_policy(".*", "cpu");
    let c = init.spec.containers.remove(0);
    init.spec.containers.push(sidecar("main"));
    init.spec.init_containers.push(c);
    assert_eq!(fields(&init), ["spec.initContainers[0].resourcesPolicy"]);
}

#[test]
fn hot_upgrade_needs_an_empty_image_and_keeps_its_type() {
    let mut s = valid("s");
    s.spec.containers[0].upgrade_strategy = SidecarContainerUpgradeStrategy {
        upgrade_type: Some(SidecarContainerUpgradeType::HotUpgrade),
        hot_upgrade_empty_image: String::new(),
    };
    assert_eq!(fields(&s), ["spec.containers[0].upgradeStrategy.hotUpgradeEmptyImage"]);
    s.spec.containers[0].upgrade_strategy.hot_upgrade_empty_image = "empty:1".into();
    assert_eq!(fields(&s), Vec::<String>::new());
    let mut cold = s.clone();
    cold.metadata.resource_version = Some("1".into());
    s.metadata.resource_version = Some("1".into());
    cold.spec.containers[0].upgrade_strategy = SidecarContainerUpgradeStrategy {
        upgrade_type: Some(SidecarContainerUpgradeType::ColdUpgrade),
        hot_upgrade_empty_image: String::new(),
    };
    assert_eq!(
        check(&cold, Some(&s), &[]),
        [
            "spec.containers.upgradeStrategy.upgradeType: Invalid value: \"dns-f\": container dns-f upgradeType is immutable"
        ]
    );
    let mut added = s.clone();
    added.spec.containers.push(sidecar("new"));
    assert_eq!(
        check(&added, Some(&s), &[]),
        ["spec.containers.name: Invalid value: \"new\": container new is not found"]
    );
}

#[test]
fn injection_revision_rules() {
    let mut s = valid("s");
    s.spec.injection_strategy.revision = Some(SidecarSetInjectRevision::default());
    assert_eq!(fields(&s), ["spec.injectionStrategy.revision"]);
    s.spec.injection_strategy.revision = Some(SidecarSetInjectRevision {
        revision_name: Some("s-1".into()),
        policy: Some(SidecarSetInjectRevisionPolicy::Other("Sometimes".into())),
        ..Default::default()
    });
    assert_eq!(
        fields(&s),
        ["spec.injectionStrategy.revision", "spec.injectionStrategy.revision.policy"]
    );
    let revisions = [ControllerRevision {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("s-1".into()),
            ..Default::default()
        },
        ..Default::default()
    }];
    s.spec.injection_strategy.revision.as_mut().expect("rev").policy =
        Some(SidecarSetInjectRevisionPolicy::Partial);
    let ctx = SidecarSetContext { revisions: &revisions, ..Default::default() };
    assert!(validate_sidecar_set(&s, None, &ctx).is_empty());
}

#[test]
fn patch_pod_metadata_rules() {
    let mut s = valid("s");
    s.spec.patch_pod_metadata = vec![
        SidecarSetPatchPodMetadata { annotations: labels(&[("a", "1")]), patch_policy: None },
        SidecarSetPatchPodMetadata { annotations: labels(&[("a", "2")]), patch_policy: None },
        SidecarSetPatchPodMetadata { annotations: BTreeMap::new(), patch_policy: None },
    ];
    assert_eq!(
        check(&s, None, &[]),
        [
            "spec.patchPodMetadata: Required value: SidecarSet patch metadata whitelist not found",
            "spec.patchPodMetadata: Required value: patch annotation[a] already exist",
            "spec.patchPodMetadata: Required value: no annotations defined for SidecarSet",
        ]
    );
    let whitelist = PatchMetadataWhitelist {
        rules: vec![crate::sidecarset::whitelist::PatchMetadataWhitelistRule {
            selector: None,
            allowed_annotation_key_exprs: vec!["^a$".into()],
        }],
    };
    s.spec.patch_pod_metadata.truncate(1);
    let ctx = SidecarSetContext { whitelist: Some(&whitelist), ..Default::default() };
    assert!(validate_sidecar_set(&s, None, &ctx).is_empty());
}

#[test]
fn conflicts_with_other_sidecar_sets_selecting_the_same_pods() {
    let other = {
        let mut o = valid("other");
        o.spec.volumes = vec![Volume { name: "vol".into(), ..Default::default() }];
        o.spec.patch_pod_metadata = vec![SidecarSetPatchPodMetadata {
            annotations: labels(&[("k", "v")]),
            patch_policy: Some(SidecarSetPatchPolicyType::Overwrite),
        }];
        o
    };
    let mut s = valid("s");
    assert_eq!(
        check(&s, None, &[other.clone(), s.clone()]),
        ["spec.containers: Invalid value: \"dns-f\": container dns-f already exist in other"]
    );
    s.spec.containers[0].container.name = "log".into();
    s.spec.volumes = vec![Volume {
        name: "vol".into(),
        empty_dir: Some(Default::default()),
        ..Default::default()
    }];
    s.spec.containers[0].container.volume_mounts = None;
    let whitelist = PatchMetadataWhitelist {
        rules: vec![crate::sidecarset::whitelist::PatchMetadataWhitelistRule {
            selector: None,
            allowed_annotation_key_exprs: vec![".*".into()],
        }],
    };
    s.spec.patch_pod_metadata = vec![SidecarSetPatchPodMetadata {
        annotations: labels(&[("k", "w")]),
        patch_policy: Some(SidecarSetPatchPolicyType::MergePatchJson),
    }];
    let others = [other.clone()];
    let ctx =
        SidecarSetContext { others: &others, whitelist: Some(&whitelist), ..Default::default() };
    assert_eq!(
        validate_sidecar_set(&s, None, &ctx).messages(),
        [
            "spec.volumes: Invalid value: \"vol\": volume vol is in conflict with sidecarset other",
            "spec.patchPodMetadata: Invalid value: \"k\": annotation k is in conflict with sidecarset other",
        ]
    );
    // Selectors that cannot overlap keep them apart.
    s.spec.selector.as_mut().expect("sel").match_labels = Some(labels(&[("app", "db")]));
    assert!(validate_sidecar_set(&s, None, &ctx).is_empty());
}

#[test]
fn canary_annotations() {
    let base = valid("base");
    let mut canary = valid("canary");
    canary.spec.containers[0].container.name = "dns-f".into();
    canary.spec.update_strategy.type_ = Some(SidecarSetUpdateStrategyType::NotUpdate);
    canary.metadata.annotations = Some(labels(&[
        (annotations::SIDECARSET_CANARY, "true"),
        (annotations::SIDECARSET_BASE, "base"),
    ]));
    // The base is ignored in the name-conflict check.
    assert_eq!(check(&canary, None, std::slice::from_ref(&base)), Vec::<String>::new());
    let errs = check(&canary, None, &[]);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].ends_with(
            "fetch base sidecarSet[base] failed: sidecarsets.apps.kruise.io \"base\" not found"
        ),
        "{errs:?}"
    );
    let mut rolling = canary.clone();
    rolling.spec.update_strategy.type_ = Some(SidecarSetUpdateStrategyType::RollingUpdate);
    let errs = check(&rolling, None, std::slice::from_ref(&base));
    assert!(errs[0].ends_with("RollingUpdate is not supported for canary sidecarSet"), "{errs:?}");
    let mut moved = canary.clone();
    moved
        .metadata
        .annotations
        .as_mut()
        .expect("notes")
        .insert(annotations::SIDECARSET_BASE.into(), "base2".into());
    let mut base2 = valid("base2");
    base2.spec.containers[0].container.name = "x".into();
    let errs = check(&moved, Some(&canary), &[base.clone(), base2]);
    assert!(
        errs[0].ends_with("annotations[apps.kruise.io/sidecarset-base] is immutable"),
        "{errs:?}"
    );
    let mut itself = canary.clone();
    itself
        .metadata
        .annotations
        .as_mut()
        .expect("notes")
        .insert(annotations::SIDECARSET_BASE.into(), "canary".into());
    let errs = check(&itself, None, &[itself.clone()]);
    assert!(errs.iter().any(|e| e.ends_with("base sidecarSet cannot be itself")), "{errs:?}");
    assert!(errs.iter().any(|e| e.ends_with("base sidecarSet cannot be canary")), "{errs:?}");
}

#[test]
fn defaulting_fills_upstreams_defaults_and_the_hashes() {
    let mut s = SidecarSet::new(
        "s",
        SidecarSetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(labels(&[("app", "nginx")])),
                ..Default::default()
            }),
            init_containers: vec![SidecarContainer {
                container: Container {
                    name: "init".into(),
                    image: Some("busybox".into()),
                    ..Default::default()
                },
                ..Default::default()
            }],
            containers: vec![SidecarContainer {
                container: Container {
                    name: "mesh".into(),
                    image: Some("mesh:1.2".into()),
                    ..Default::default()
                },
                ..Default::default()
            }],
            patch_pod_metadata: vec![SidecarSetPatchPodMetadata {
                annotations: labels(&[("k", "v")]),
                patch_policy: None,
            }],
            injection_strategy: kruise_api::apps::v1beta1::SidecarSetInjectionStrategy {
                revision: Some(SidecarSetInjectRevision {
                    revision_name: Some("r".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    default_sidecar_set(&mut s);
    let spec = &s.spec;
    assert_eq!(spec.update_strategy.type_, Some(SidecarSetUpdateStrategyType::RollingUpdate));
    assert_eq!(spec.update_strategy.max_unavailable, Some(IntOrString::Int(1)));
    assert_eq!(spec.update_strategy.partition, Some(IntOrString::Int(0)));
    assert_eq!(spec.containers[0].pod_inject_policy, Some(PodInjectPolicyType::BeforeAppContainer));
    assert_eq!(
        spec.init_containers[0].pod_inject_policy,
        Some(PodInjectPolicyType::AfterAppContainer)
    );
    assert_eq!(
        spec.containers[0].upgrade_strategy.upgrade_type,
        Some(SidecarContainerUpgradeType::ColdUpgrade)
    );
    assert_eq!(spec.containers[0].share_volume_policy.type_, Some(ShareVolumePolicyType::Disabled));
    assert_eq!(spec.containers[0].container.image_pull_policy.as_deref(), Some("IfNotPresent"));
    assert_eq!(spec.init_containers[0].container.image_pull_policy.as_deref(), Some("Always"));
    assert_eq!(spec.containers[0].container.termination_message_policy.as_deref(), Some("File"));
    assert_eq!(spec.revision_history_limit, Some(10));
    assert_eq!(spec.patch_pod_metadata[0].patch_policy, Some(SidecarSetPatchPolicyType::Retain));
    assert_eq!(
        spec.injection_strategy.revision.as_ref().and_then(|r| r.policy.clone()),
        Some(SidecarSetInjectRevisionPolicy::Always)
    );
    let notes = s.metadata.annotations.clone().expect("notes");
    assert_eq!(notes[annotations::SIDECARSET_HASH], crate::sidecarset::sidecar_set_hash(&s.spec));
    // The defaulted SidecarSet passes validation.
    let revisions = [ControllerRevision {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("r".into()),
            ..Default::default()
        },
        ..Default::default()
    }];
    let whitelist = PatchMetadataWhitelist {
        rules: vec![crate::sidecarset::whitelist::PatchMetadataWhitelistRule {
            selector: None,
            allowed_annotation_key_exprs: vec!["^k$".into()],
        }],
    };
    let ctx = SidecarSetContext {
        revisions: &revisions,
        whitelist: Some(&whitelist),
        ..Default::default()
    };
    assert_eq!(validate_sidecar_set(&s, None, &ctx).messages(), Vec::<String>::new());
    // Defaulting twice changes nothing.
    let once = s.clone();
    default_sidecar_set(&mut s);
    assert_eq!(s, once);
}
