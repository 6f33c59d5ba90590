//! TEMPORARY: prints plans of workload variants as JSON lines, to compare before/after.

use kruise_core::cloneset::{CloneSetObject, CloneSetSnapshot, plan};
use serde_json::json;

fn with_strategy(s: &CloneSetSnapshot, f: impl Fn(&mut serde_json::Value)) -> CloneSetSnapshot {
    let mut s = s.clone();
    let mut v = serde_json::to_value(&s.cloneset).unwrap();
    f(&mut v);
    s.cloneset = serde_json::from_value::<CloneSetObject>(v).unwrap();
    s
}

fn label(p: &mut k8s_openapi::api::core::v1::Pod, k: &str, v: &str) {
    p.metadata.labels.get_or_insert_default().insert(k.into(), v.into());
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let now = benches::now();
    let base = benches::snapshot(n);
    let mut variants: Vec<(String, CloneSetSnapshot)> = vec![("base".into(), base.clone())];
    let all = |v: &mut serde_json::Value| {
        v["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!("100%");
        v["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = json!(0);
    };
    variants.push(("all".into(), with_strategy(&base, all)));
    variants.push((
        "order".into(),
        with_strategy(&base, |v| {
            all(v);
            v["spec"]["updateStrategy"]["rollingUpdate"]["priorityStrategy"] = json!({
                "orderPriority": [{"orderedKey": "order"}, {"orderedKey": "zone"}]
            });
        }),
    ));
    variants.push((
        "multiscatter".into(),
        with_strategy(&base, |v| {
            all(v);
            v["spec"]["updateStrategy"]["rollingUpdate"]["scatterStrategy"] = json!([
                {"key": "zone", "value": "zone-c"}, {"key": "tier", "value": "canary"},
                {"key": "zone", "value": "zone-a"}, {"key": "zone", "value": "zone-c"},
                {"key": "missing", "value": ""}, {"key": "order", "value": "o-3"}
            ]);
            v["spec"]["updateStrategy"]["rollingUpdate"]["priorityStrategy"] = json!({
                "weightPriority": [
                    {"weight": 5, "matchSelector": {"matchExpressions": [
                        {"key": "order", "operator": "NotIn", "values": ["o-1", "o-2"]},
                        {"key": "zone", "operator": "Exists"}]}},
                    {"weight": 7, "matchSelector": {"matchExpressions": [
                        {"key": "nope", "operator": "DoesNotExist"}]}},
                    {"weight": 9, "matchSelector": {"matchExpressions": [
                        {"key": "zone", "operator": "Bogus"}]}},
                    {"weight": 3, "matchSelector": {}}
                ]
            });
        }),
    ));
    // Mixed pod states.
    let mut mixed = with_strategy(&base, all);
    for (i, p) in mixed.pods.iter_mut().enumerate() {
        label(p, "order", &format!("o-{}", i % 37));
        if i % 11 == 0 && i % 3 != 0 {
            label(p, "lifecycle.apps.kruise.io/state", "PreparingUpdate");
        }
        if i % 13 == 0 {
            p.spec.as_mut().unwrap().node_name = None;
        }
        if i % 19 == 0 {
            p.status.as_mut().unwrap().phase = Some("Pending".into());
        }
        if i % 23 == 0 {
            p.status.as_mut().unwrap().phase = Some("Unknown".into());
        }
        if i % 29 == 0 {
            p.metadata.creation_timestamp = None;
        }
        if i % 31 == 0 {
            p.metadata.name = Some(format!("bench-{:06}", i / 2));
        }
        if i % 7 == 0 {
            let c = &mut p.status.as_mut().unwrap().conditions.as_mut().unwrap()[0];
            c.last_transition_time = None;
        }
    }
    variants.push(("mixed".into(), mixed.clone()));
    for (name, s) in variants.clone() {
        if name == "base" || name == "mixed" {
            continue;
        }
        let mut m = s.clone();
        m.pods = mixed.pods.clone();
        variants.push((format!("{name}+mixed"), m));
    }
    // Scale down (same-node ranks), and with topology spread.
    let down = with_strategy(&mixed, |v| v["spec"]["replicas"] = json!(n * 8 / 10));
    variants.push(("down".into(), down.clone()));
    let mut spread = with_strategy(&down, |v| {
        v["spec"]["template"]["spec"]["topologySpreadConstraints"] = json!([
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}
        ]);
    });
    for k in 0..500 {
        let node = format!("node-{k}");
        spread.node_labels.insert(
            node.clone(),
            [
                ("zone".to_owned(), format!("z{}", k % 7)),
                ("kubernetes.io/hostname".to_owned(), node),
            ]
            .into(),
        );
    }
    variants.push(("spread".into(), spread));
    for (name, s) in &variants {
        let p = plan(s, now);
        println!("{name}\t{}", serde_json::to_string(&p).unwrap());
    }
}
