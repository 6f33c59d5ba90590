//! Unknown fields of custom resources under each `fieldValidation`, and a changed
//! `metadata.uid` on update, as kube-apiserver answers them.

use crate::common::{Env, client, raw};
use std::time::Duration;

/// A Kruise v1alpha1 StatefulSet; `reserveOrdinals` is a v1beta1 field, unknown to v1alpha1.
fn sts(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: apps.kruise.io/v1alpha1
kind: StatefulSet
metadata: {{name: {name}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
{extra}"
    )
}

const RESERVE: &str = "  reserveOrdinals: [1]\n";

fn run(env: &Env, args: &[&str], stdin: &str) -> crate::common::Out {
    env.run_with(args, Some(stdin), Duration::from_secs(30))
}

#[test]
fn unknown_fields_of_custom_resources_are_refused_warned_or_pruned() {
    let env = Env::kruise();
    // kubectl's default is Strict: refused with the decoder's message.
    let o = run(&env, &["apply", "-f", "-"], &sts("strict", RESERVE));
    assert!(!o.ok);
    assert!(
        o.stderr.contains(
            r#"Error from server (BadRequest): error when creating "STDIN": StatefulSet in version "v1alpha1" cannot be handled as a StatefulSet: strict decoding error: unknown field "spec.reserveOrdinals""#
        ),
        "{}",
        o.stderr
    );
    // Several: unknown metadata fields first, then the pruned paths sorted.
    let many = sts("many", RESERVE)
        .replace("metadata: {name: many}", "metadata: {name: many, bogus: 1}")
        + "  zeta: 1\naaa: 1\n";
    let o = run(&env, &["create", "-f", "-"], &many);
    assert!(
        o.stderr.contains(
            r#"strict decoding error: unknown field "metadata.bogus", unknown field "aaa", unknown field "spec.reserveOrdinals", unknown field "spec.zeta""#
        ),
        "{}",
        o.stderr
    );
    // Warn: created, with the warning, the field pruned.
    let o = run(&env, &["apply", "--validate=warn", "-f", "-"], &sts("warned", RESERVE));
    assert!(o.ok, "{}", o.stderr);
    assert!(o.stderr.contains(r#"Warning: unknown field "spec.reserveOrdinals""#), "{}", o.stderr);
    assert!(
        env.json(&["get", "statefulsets.apps.kruise.io", "warned"])["spec"]
            .get("reserveOrdinals")
            .is_none()
    );
    // Ignore: created silently, pruned.
    let o = run(&env, &["apply", "--validate=false", "-f", "-"], &sts("ignored", RESERVE));
    assert!(o.ok && !o.stderr.contains("Warning"), "{}", o.stderr);
    assert!(
        env.json(&["get", "statefulsets.apps.kruise.io", "ignored"])["spec"]
            .get("reserveOrdinals")
            .is_none()
    );
    // A field under x-kubernetes-preserve-unknown-fields (the pod template) is kept.
    let kept =
        sts("kept", "").replace("    metadata: {labels", "    custom: kept\n    metadata: {labels");
    let o = run(&env, &["apply", "-f", "-"], &kept);
    assert!(o.ok && !o.stderr.contains("Warning"), "{}", o.stderr);
    assert_eq!(
        env.json(&["get", "statefulsets.v1alpha1.apps.kruise.io", "kept"])["spec"]["template"]["custom"],
        "kept"
    );

    // An update (PUT) is decoded as a create is.
    let mut stored = env.json(&["get", "statefulsets.v1alpha1.apps.kruise.io", "kept"]);
    stored["spec"]["reserveOrdinals"] = serde_json::json!([1]);
    let o = run(&env, &["replace", "-f", "-"], &stored.to_string());
    assert!(
        !o.ok && o.stderr.contains(
            r#"error when replacing "STDIN": StatefulSet in version "v1alpha1" cannot be handled as a StatefulSet: strict decoding error: unknown field "spec.reserveOrdinals""#
        ),
        "{}",
        o.stderr
    );
    // kubectl apply to an existing object sends a merge patch: the patched object is decoded
    // strictly, and the error is the patcher's 422.
    let o = run(&env, &["apply", "-f", "-"], &sts("kept", RESERVE));
    assert!(
        !o.ok
            && o.stderr.contains(
                "patch: Invalid value: \"{\\\"apiVersion\\\":\\\"apps.kruise.io/v1alpha1\\\""
            )
            && o.stderr.contains(r#"strict decoding error: unknown field "spec.reserveOrdinals""#),
        "{}",
        o.stderr
    );
    let o = run(&env, &["apply", "--validate=warn", "-f", "-"], &sts("kept", RESERVE));
    assert!(
        o.ok && o.stderr.contains(r#"Warning: unknown field "spec.reserveOrdinals""#),
        "{}",
        o.stderr
    );

    // Server-side apply refuses undeclared fields whatever fieldValidation says.
    for validate in ["--validate=strict", "--validate=false"] {
        let o = run(&env, &["apply", "--server-side", validate, "-f", "-"], &sts("ssa", RESERVE));
        assert!(
            !o.ok && o.stderr.contains(
                "failed to create typed patch object (default/ssa; apps.kruise.io/v1alpha1, Kind=StatefulSet): .spec.reserveOrdinals: field not declared in schema"
            ),
            "{validate}: {}",
            o.stderr
        );
    }
    env.ok_stdin(&["apply", "--server-side", "-f", "-"], &sts("ssa", ""));
}

/// The raw Status of a strict merge patch: 422 with the patched object as the value.
#[test]
fn strict_merge_patch_status() {
    let env = Env::kruise();
    env.ok_stdin(&["apply", "-f", "-"], &sts("web", ""));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let c = client(&env.server).await;
        let path = "/apis/apps.kruise.io/v1alpha1/namespaces/default/statefulsets/web";
        let patch = serde_json::json!({"spec": {"zeta": 1, "reserveOrdinals": [1]}});
        let e = raw(&c, "PATCH", &format!("{path}?fieldValidation=Strict"), "application/merge-patch+json", Some(patch.clone()))
            .await
            .expect_err("refused");
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{e:?}");
        assert!(e.message.starts_with(r#" "" is invalid: patch: Invalid value: "{\"apiVersion\":\"apps.kruise.io/v1alpha1\",\"kind\":\"StatefulSet\",\"metadata\":{"#), "{}", e.message);
        assert!(
            e.message.ends_with(r#"": strict decoding error: unknown field "spec.reserveOrdinals", unknown field "spec.zeta""#),
            "{}",
            e.message
        );
        let ok = raw(&c, "PATCH", &format!("{path}?fieldValidation=Ignore"), "application/merge-patch+json", Some(patch))
            .await
            .expect("pruned");
        assert!(ok["spec"].get("zeta").is_none(), "{ok}");
    });
}

fn without_status(mut v: serde_json::Value) -> String {
    if let Some(m) = v.as_object_mut() {
        m.remove("status");
    }
    v.to_string()
}

#[test]
fn a_changed_uid_is_refused_on_update() {
    let env = Env::kruise();
    env.ok(&["create", "configmap", "cm", "--from-literal=a=1"]);
    let cm = env.json(&["get", "configmap", "cm"]);
    let uid = cm["metadata"]["uid"].as_str().expect("uid").to_string();
    let other = "00000000-0000-0000-0000-000000000001";
    let mut changed = cm.clone();
    changed["metadata"]["uid"] = serde_json::json!(other);
    let o = run(&env, &["replace", "-f", "-"], &changed.to_string());
    assert!(!o.ok);
    assert!(
        o.stderr.contains(&format!(
            r#"Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on configmaps "cm": StorageError: invalid object, Code: 4, Key: /registry/configmaps/default/cm, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {other}, UID in object meta: {uid}"#
        )),
        "{}",
        o.stderr
    );
    // The same uid, or none, is fine.
    let mut same = cm.clone();
    same["data"]["a"] = serde_json::json!("2");
    env.ok_stdin(&["replace", "-f", "-"], &same.to_string());
    let mut none = env.json(&["get", "configmap", "cm"]);
    none["metadata"].as_object_mut().expect("metadata").remove("uid");
    none["data"]["a"] = serde_json::json!("3");
    env.ok_stdin(&["replace", "-f", "-"], &none.to_string());
    let now = env.json(&["get", "configmap", "cm"]);
    assert_eq!(
        (now["metadata"]["uid"].as_str(), now["data"]["a"].as_str()),
        (Some(uid.as_str()), Some("3"))
    );
    // A patch that changes the uid fails validation instead.
    let e = env.fails(&[
        "patch",
        "configmap",
        "cm",
        "--type",
        "merge",
        "-p",
        &format!(r#"{{"metadata":{{"uid":"{other}"}}}}"#),
    ]);
    assert!(
        e.contains(&format!(r#"The ConfigMap "cm" is invalid: metadata.uid: Invalid value: "{other}": field is immutable"#)),
        "{e}"
    );

    // A pod.
    env.ok(&["run", "p", "--image=nginx"]);
    let pod = env.json(&["get", "pod", "p"]);
    let pod_uid = pod["metadata"]["uid"].as_str().expect("uid").to_string();
    let mut changed = pod.clone();
    changed["metadata"]["uid"] = serde_json::json!(other);
    let o = run(&env, &["replace", "-f", "-"], &without_status(changed));
    assert!(
        !o.ok && o.stderr.contains(&format!(
            r#"Operation cannot be fulfilled on pods "p": StorageError: invalid object, Code: 4, Key: /registry/pods/default/p, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {other}, UID in object meta: {pod_uid}"#
        )),
        "{}",
        o.stderr
    );

    // A custom resource.
    env.ok_stdin(&["apply", "-f", "-"], &sts("web", ""));
    let web = env.json(&["get", "statefulsets.apps.kruise.io", "web"]);
    let web_uid = web["metadata"]["uid"].as_str().expect("uid").to_string();
    let mut changed = web.clone();
    changed["metadata"]["uid"] = serde_json::json!(other);
    let o = run(&env, &["replace", "-f", "-"], &without_status(changed));
    assert!(
        !o.ok && o.stderr.contains(&format!(
            r#"Operation cannot be fulfilled on statefulsets.apps.kruise.io "web": StorageError: invalid object, Code: 4, Key: /registry/apps.kruise.io/statefulsets/default/web, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {other}, UID in object meta: {web_uid}"#
        )),
        "{}",
        o.stderr
    );
    let mut same = web.clone();
    same["spec"]["replicas"] = serde_json::json!(3);
    env.ok_stdin(&["replace", "-f", "-"], &without_status(same));
    let e = env.fails(&[
        "patch",
        "statefulsets.apps.kruise.io",
        "web",
        "--type",
        "merge",
        "-p",
        &format!(r#"{{"metadata":{{"uid":"{other}"}}}}"#),
    ]);
    assert!(
        e.contains(&format!(r#"The StatefulSet "web" is invalid: metadata.uid: Invalid value: "{other}": field is immutable"#)),
        "{e}"
    );
}
