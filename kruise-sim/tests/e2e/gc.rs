//! Garbage collection by ownerReferences, driven by the real kubectl.

use crate::common;

use common::Env;
use kruise_sim::Config;
use serde_json::{Value, json};

fn uid(env: &Env, kind: &str, name: &str) -> String {
    env.json(&["get", kind, name])["metadata"]["uid"].as_str().expect("uid").to_string()
}

fn owned(
    kind: &str,
    name: &str,
    owner: &str,
    owner_uid: &str,
    block: bool,
    extra: Value,
) -> String {
    let mut v = json!({
        "apiVersion": "v1", "kind": kind,
        "metadata": {"name": name, "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": owner_uid,
            "blockOwnerDeletion": block
        }]}
    });
    if let (Some(m), Some(e)) = (v["metadata"].as_object_mut(), extra.as_object()) {
        for (k, x) in e {
            m.insert(k.clone(), x.clone());
        }
    }
    v.to_string()
}

fn absent(env: &Env, kind: &str, name: &str) -> bool {
    env.run(&["get", kind, name]).stderr.contains("NotFound")
}

#[test]
fn background_foreground_orphan_and_dangling() {
    let env = Env::new(Config::default());
    let cm = |n: &str| {
        format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{n}"}}}}"#)
    };

    // Background (kubectl's default): dependents and their dependents go.
    env.ok_stdin(&["apply", "-f", "-"], &cm("owner"));
    let u = uid(&env, "cm", "owner");
    env.ok_stdin(&["apply", "-f", "-"], &owned("ConfigMap", "dep1", "owner", &u, true, json!({})));
    env.ok_stdin(&["apply", "-f", "-"], &owned("ConfigMap", "dep2", "owner", &u, false, json!({})));
    let u1 = uid(&env, "cm", "dep1");
    let grand = owned("Secret", "grand", "dep1", &u1, false, json!({}));
    env.ok_stdin(&["apply", "-f", "-"], &grand);
    env.ok(&["delete", "cm", "owner"]);
    for (k, n) in [("cm", "owner"), ("cm", "dep1"), ("cm", "dep2"), ("secret", "grand")] {
        assert!(absent(&env, k, n), "{k}/{n} should be collected");
    }

    // Foreground: the owner waits for its blocking dependents.
    env.ok_stdin(&["apply", "-f", "-"], &cm("owner2"));
    let u = uid(&env, "cm", "owner2");
    let held = owned(
        "ConfigMap",
        "dep3",
        "owner2",
        &u,
        true,
        json!({"finalizers": ["test.kruise.io/hold"]}),
    );
    env.ok_stdin(&["apply", "-f", "-"], &held);
    env.ok_stdin(
        &["apply", "-f", "-"],
        &owned("ConfigMap", "dep4", "owner2", &u, false, json!({})),
    );
    env.ok(&["delete", "cm", "owner2", "--cascade=foreground", "--wait=false"]);
    let o = env.json(&["get", "cm", "owner2"]);
    assert!(o["metadata"]["deletionTimestamp"].is_string(), "{o}");
    assert_eq!(o["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    let d = env.json(&["get", "cm", "dep3"]);
    assert!(d["metadata"]["deletionTimestamp"].is_string(), "{d}");
    assert!(absent(&env, "cm", "dep4"));
    env.ok(&[
        "patch",
        "cm",
        "dep3",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    assert!(absent(&env, "cm", "dep3"));
    assert!(absent(&env, "cm", "owner2"), "the owner goes once its blocking dependents are gone");

    // Orphan: the dependents stay, without the reference.
    env.ok_stdin(&["apply", "-f", "-"], &cm("owner3"));
    let u = uid(&env, "cm", "owner3");
    env.ok_stdin(&["apply", "-f", "-"], &owned("ConfigMap", "dep5", "owner3", &u, true, json!({})));
    env.ok(&["delete", "cm", "owner3", "--cascade=orphan"]);
    assert!(absent(&env, "cm", "owner3"));
    let d = env.json(&["get", "cm", "dep5"]);
    assert!(d["metadata"]["ownerReferences"].is_null(), "{d}");
    assert!(d["metadata"]["finalizers"].is_null(), "{d}");

    // A dependent whose owner does not exist (another uid) is collected; one with a live
    // owner left only loses the dangling reference.
    env.ok_stdin(
        &["apply", "-f", "-"],
        &owned("ConfigMap", "stray", "dep5", "not-the-uid", false, json!({})),
    );
    assert!(absent(&env, "cm", "stray"));
    let u5 = uid(&env, "cm", "dep5");
    let two = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "two", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "dep5", "uid": u5},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "ghost-uid"}]}});
    env.ok_stdin(&["apply", "-f", "-"], &two.to_string());
    let t = env.json(&["get", "cm", "two"]);
    assert_eq!(t["metadata"]["ownerReferences"].as_array().map(Vec::len), Some(1), "{t}");
}
