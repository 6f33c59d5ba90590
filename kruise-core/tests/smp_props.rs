//! Properties of the strategic merge patch on generated Pod documents: a created patch turns
//! the original into the modified document, and empty patches change nothing.

use kruise_core::smp::{PatchSchema, apply_patch, create_patch};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Drops object members set to `null`, at any depth: the API server's decoder reads them as
/// absent, so two documents that differ only there are the same object.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// A few distinct values from `pool`, in random order.
fn distinct(pool: &'static [&'static str], max: usize) -> impl Strategy<Value = Vec<&'static str>> {
    proptest::sample::subsequence(pool, 0..=max.min(pool.len())).prop_shuffle()
}

/// Sets `key` in `map` unless `value` is `None`.
fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        map.insert(key.to_owned(), value);
    }
}

fn small_map(keys: &'static [&'static str]) -> impl Strategy<Value = Value> {
    proptest::collection::btree_map(proptest::sample::select(keys), "[a-c]{1,2}", 0..3)
        .prop_map(|m| json!(m))
}

fn env() -> impl Strategy<Value = Value> {
    distinct(&["A", "B", "C", "D"], 3).prop_flat_map(|names| {
        let items: Vec<_> = names
            .into_iter()
            .map(|name| {
                prop_oneof![
                    "[xy]{0,2}".prop_map(move |v| json!({"name": name, "value": v})),
                    Just(json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})),
                    Just(json!({"name": name, "value": null})),
                ]
            })
            .collect();
        items.prop_map(Value::Array)
    })
}

fn ports() -> impl Strategy<Value = Value> {
    proptest::sample::subsequence(vec![80u16, 443, 8080, 9090], 0..=3).prop_shuffle().prop_flat_map(
        |numbers| {
            let items: Vec<_> = numbers
                .into_iter()
                .map(|port| {
                    (proptest::option::of(prop_oneof![Just("TCP"), Just("UDP")]), any::<bool>())
                        .prop_map(move |(protocol, named)| {
                            let mut item = Map::new();
                            item.insert("containerPort".into(), json!(port));
                            put(&mut item, "protocol", protocol.map(|p| json!(p)));
                            if named {
                                item.insert("name".into(), json!(format!("p{port}")));
                            }
                            Value::Object(item)
                        })
                })
                .collect();
            items.prop_map(Value::Array)
        },
    )
}

fn mounts() -> impl Strategy<Value = Value> {
    distinct(&["/data", "/etc/conf", "/tmp", "/var/log"], 3).prop_flat_map(|paths| {
        let items: Vec<_> = paths
            .into_iter()
            .map(|path| {
                (proptest::sample::select(&["v1", "v2", "v3"][..]), any::<bool>()).prop_map(
                    move |(volume, read_only)| {
                        if read_only {
                            json!({"name": volume, "mountPath": path, "readOnly": true})
                        } else {
                            json!({"name": volume, "mountPath": path})
                        }
                    },
                )
            })
            .collect();
        items.prop_map(Value::Array)
    })
}

fn container(name: &'static str) -> impl Strategy<Value = Value> {
    (
        proptest::option::of(prop_oneof![Just("nginx:1"), Just("nginx:2"), Just("busybox")]),
        proptest::option::of(env()),
        proptest::option::of(ports()),
        proptest::option::of(mounts()),
        proptest::option::of(proptest::collection::vec("[a-c]", 0..3)),
        proptest::option::of(small_map(&["cpu", "memory"])),
        any::<bool>(),
    )
        .prop_map(move |(image, env, ports, mounts, args, limits, null_image)| {
            let mut c = Map::new();
            c.insert("name".into(), json!(name));
            put(&mut c, "image", image.map(|i| json!(i)));
            if null_image && !c.contains_key("image") {
                c.insert("image".into(), Value::Null);
            }
            put(&mut c, "env", env);
            put(&mut c, "ports", ports);
            put(&mut c, "volumeMounts", mounts);
            put(&mut c, "args", args.map(|a| json!(a)));
            put(&mut c, "resources", limits.map(|l| json!({"limits": l})));
            Value::Object(c)
        })
}

fn containers(pool: &'static [&'static str]) -> impl Strategy<Value = Value> {
    distinct(pool, 3).prop_flat_map(|names| {
        let items: Vec<_> = names.into_iter().map(container).collect();
        items.prop_map(Value::Array)
    })
}

fn volumes() -> impl Strategy<Value = Value> {
    distinct(&["v1", "v2", "v3"], 3).prop_flat_map(|names| {
        let items: Vec<_> = names
            .into_iter()
            .map(|name| {
                prop_oneof![
                    Just(json!({"name": name, "emptyDir": {}})),
                    Just(json!({"name": name, "emptyDir": {"medium": "Memory"}})),
                    "[a-c]".prop_map(move |cm| json!({"name": name, "configMap": {"name": cm}})),
                    Just(json!({"name": name, "secret": {"secretName": "s", "optional": true}})),
                    Just(json!({"name": name, "hostPath": {"path": "/x"}})),
                ]
            })
            .collect();
        items.prop_map(Value::Array)
    })
}

/// A list of objects with distinct `key`s from `pool`, each with the fixed members `fixed`
/// and maybe a string member `extra`.
fn keyed_with(
    key: &'static str,
    pool: &'static [&'static str],
    extra: &'static str,
    fixed: fn() -> Value,
) -> impl Strategy<Value = Value> {
    distinct(pool, 3).prop_flat_map(move |names| {
        let items: Vec<_> = names
            .into_iter()
            .map(move |name| {
                proptest::option::of("[a-c]{1,2}").prop_map(move |v| {
                    let mut item = match fixed() {
                        Value::Object(map) => map,
                        _ => Map::new(),
                    };
                    item.insert(key.to_owned(), json!(name));
                    put(&mut item, extra, v.map(|v| json!(v)));
                    Value::Object(item)
                })
            })
            .collect();
        items.prop_map(Value::Array)
    })
}

fn keyed(
    key: &'static str,
    pool: &'static [&'static str],
    extra: &'static str,
) -> impl Strategy<Value = Value> {
    keyed_with(key, pool, extra, || json!({}))
}

fn tolerations() -> impl Strategy<Value = Value> {
    proptest::collection::vec(
        (proptest::sample::select(&["a", "b", "c"][..]), proptest::option::of("[xy]")).prop_map(
            |(key, value)| match value {
                Some(v) => json!({"key": key, "operator": "Equal", "value": v}),
                None => json!({"key": key, "operator": "Exists"}),
            },
        ),
        0..3,
    )
    .prop_map(Value::Array)
}

fn host_aliases() -> impl Strategy<Value = Value> {
    distinct(&["10.0.0.1", "10.0.0.2", "10.0.0.3"], 2).prop_flat_map(|ips| {
        let items: Vec<_> = ips
            .into_iter()
            .map(|ip| {
                proptest::collection::vec("[a-c]\\.local", 0..3)
                    .prop_map(move |names| json!({"ip": ip, "hostnames": names}))
            })
            .collect();
        items.prop_map(Value::Array)
    })
}

fn metadata() -> impl Strategy<Value = Value> {
    (
        proptest::option::of(small_map(&["app", "tier", "version"])),
        proptest::option::of(small_map(&["note", "owner"])),
        proptest::option::of(distinct(&["a.io/x", "b.io/y", "c.io/z", "d.io/w"], 4)),
        proptest::option::of(keyed_with(
            "uid",
            &["u1", "u2", "u3"],
            "name",
            || json!({"apiVersion": "v1", "kind": "Thing", "name": "t"}),
        )),
        proptest::option::of(prop_oneof![Just("p"), Just("q")]),
    )
        .prop_map(|(labels, annotations, finalizers, owners, name)| {
            let mut m = Map::new();
            put(&mut m, "name", name.map(|n| json!(n)));
            put(&mut m, "labels", labels);
            put(&mut m, "annotations", annotations);
            put(&mut m, "finalizers", finalizers.map(|f| json!(f)));
            put(&mut m, "ownerReferences", owners);
            Value::Object(m)
        })
}

fn spec() -> impl Strategy<Value = Value> {
    (
        (
            containers(&["app", "sidecar", "proxy", "log"]),
            proptest::option::of(containers(&["init1", "init2"])),
            proptest::option::of(volumes()),
            proptest::option::of(tolerations()),
            proptest::option::of(small_map(&["zone", "disk"])),
        ),
        (
            proptest::option::of(host_aliases()),
            proptest::option::of(keyed("name", &["reg1", "reg2", "reg3"], "unused")),
            proptest::option::of(keyed_with(
                "topologyKey",
                &["zone", "host"],
                "nodeTaintsPolicy",
                || json!({"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}),
            )),
            proptest::option::of(keyed("name", &["gate1", "gate2"], "unused")),
            proptest::option::of(prop_oneof![Just("Always"), Just("Never")]),
            proptest::option::of(keyed("conditionType", &["c1", "c2"], "unused")),
        ),
    )
        .prop_map(
            |(
                (containers, init, volumes, tolerations, node_selector),
                (aliases, pull_secrets, spread, gates, restart, readiness),
            )| {
                let mut s = Map::new();
                s.insert("containers".into(), containers);
                put(&mut s, "initContainers", init);
                put(&mut s, "volumes", volumes);
                put(&mut s, "tolerations", tolerations);
                put(&mut s, "nodeSelector", node_selector);
                put(&mut s, "hostAliases", aliases);
                put(&mut s, "imagePullSecrets", pull_secrets);
                put(&mut s, "topologySpreadConstraints", spread);
                put(&mut s, "schedulingGates", gates);
                put(&mut s, "restartPolicy", restart.map(|r| json!(r)));
                put(&mut s, "readinessGates", readiness);
                Value::Object(s)
            },
        )
}

fn status() -> impl Strategy<Value = Value> {
    (
        proptest::option::of(keyed_with(
            "type",
            &["Ready", "PodScheduled", "Initialized"],
            "reason",
            || json!({"status": "True"}),
        )),
        proptest::option::of(keyed("ip", &["10.1.0.1", "fd00::1"], "unused")),
        proptest::option::of(prop_oneof![Just("Pending"), Just("Running")]),
        proptest::option::of(keyed_with(
            "name",
            &["app", "sidecar"],
            "imageID",
            || json!({"image": "i", "ready": true, "restartCount": 0}),
        )),
    )
        .prop_map(|(conditions, ips, phase, statuses)| {
            let mut s = Map::new();
            put(&mut s, "conditions", conditions);
            put(&mut s, "podIPs", ips);
            put(&mut s, "phase", phase.map(|p| json!(p)));
            put(&mut s, "containerStatuses", statuses);
            Value::Object(s)
        })
}

fn pod() -> impl Strategy<Value = Value> {
    (proptest::option::of(metadata()), spec(), proptest::option::of(status())).prop_map(
        |(metadata, spec, status)| {
            let mut p = Map::new();
            p.insert("apiVersion".into(), json!("v1"));
            p.insert("kind".into(), json!("Pod"));
            put(&mut p, "metadata", metadata);
            p.insert("spec".into(), spec);
            put(&mut p, "status", status);
            Value::Object(p)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn a_created_patch_turns_the_original_into_the_modified(a in pod(), b in pod()) {
        let patch = create_patch(&a, &b, PatchSchema::Pod).expect("create_patch");
        let patched = apply_patch(&a, &patch, PatchSchema::Pod).expect("apply_patch");
        prop_assert_eq!(without_nulls(&patched), without_nulls(&b), "patch: {}", patch);
    }

    #[test]
    fn a_created_patch_is_deterministic(a in pod(), b in pod()) {
        let first = create_patch(&a, &b, PatchSchema::Pod).expect("create_patch");
        let second = create_patch(&a, &b, PatchSchema::Pod).expect("create_patch");
        prop_assert_eq!(serde_json::to_string(&first).ok(), serde_json::to_string(&second).ok());
    }

    #[test]
    fn a_document_has_no_difference_with_itself(a in pod()) {
        prop_assert_eq!(create_patch(&a, &a, PatchSchema::Pod).expect("create_patch"), json!({}));
    }

    #[test]
    fn an_empty_patch_is_the_identity(a in pod()) {
        prop_assert_eq!(apply_patch(&a, &json!({}), PatchSchema::Pod).expect("apply_patch"), a.clone());
        prop_assert_eq!(apply_patch(&a, &Value::Null, PatchSchema::Pod).expect("apply_patch"), a);
    }

    #[test]
    fn a_patch_applied_twice_changes_nothing_more(a in pod(), b in pod()) {
        let patch = create_patch(&a, &b, PatchSchema::Pod).expect("create_patch");
        let once = apply_patch(&a, &patch, PatchSchema::Pod).expect("apply_patch");
        let twice = apply_patch(&once, &patch, PatchSchema::Pod).expect("apply_patch");
        prop_assert_eq!(without_nulls(&twice), without_nulls(&once), "patch: {}", patch);
    }

    #[test]
    fn templates_inside_workloads_round_trip(a in spec(), b in spec(), la in metadata(), lb in metadata()) {
        let wrap = |meta: &Value, spec: &Value| json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "CloneSet",
            "metadata": meta,
            "spec": {"replicas": 2, "template": {"metadata": meta, "spec": spec}}
        });
        let (a, b) = (wrap(&la, &a), wrap(&lb, &b));
        let patch = create_patch(&a, &b, PatchSchema::WORKLOAD_TEMPLATE).expect("create_patch");
        let patched = apply_patch(&a, &patch, PatchSchema::WORKLOAD_TEMPLATE).expect("apply_patch");
        prop_assert_eq!(without_nulls(&patched), without_nulls(&b), "patch: {}", patch);
    }
}

#[test]
fn generated_pods_are_valid_pods() {
    // The generator's documents decode as Pods, so the properties above are about real shapes.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    for _ in 0..64 {
        let value = pod().new_tree(&mut runner).expect("tree").current();
        let decoded: Result<k8s_openapi::api::core::v1::Pod, _> =
            serde_json::from_value(without_nulls(&value));
        assert!(decoded.is_ok(), "{value}: {decoded:?}");
    }
}
