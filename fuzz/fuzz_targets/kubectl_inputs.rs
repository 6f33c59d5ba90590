//! What `kubectl kruise` reads from users: files of objects (`validate -f`, `plan -f`), and the
//! objects and arguments its commands turn into patches (`set`, `expose`, `migrate --create`). No input panics, and every patch is
//! guarded by the resourceVersion.

#![no_main]

use kruise_api::apps::v1beta1::{CloneSet, DaemonSet, StatefulSet};
use kruise_core::rollout;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(objects) = rollout::documents(text) else { return };
    for object in &objects {
        let arguments: Vec<String> = object["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect();
        for patch in [
            rollout::set_image_patch(object, &arguments).ok().flatten(),
            rollout::set_env_patch(object, object["container"].as_str(), &arguments).ok().flatten(),
        ]
        .into_iter()
        .flatten()
        {
            assert_eq!(patch[0]["path"], "/metadata/resourceVersion", "{patch}");
        }
        let text = |key: &str| object[key].as_str().unwrap_or_default();
        let from = rollout::set::env_from_patch(
            object,
            None,
            &object["source"],
            text("prefix"),
            &arguments,
        );
        let selector = rollout::set::selector_patch(object, text("selector"));
        let subjects = rollout::set::Subjects {
            users: arguments.clone(),
            groups: Vec::new(),
            service_accounts: arguments.clone(),
        };
        for patch in [
            from.ok().flatten(),
            selector.ok().flatten(),
            rollout::set::subject_patch(object, &subjects).ok().flatten(),
        ]
        .into_iter()
        .flatten()
        {
            assert_eq!(patch[0]["path"], "/metadata/resourceVersion", "{patch}");
        }
        let options = rollout::ExposeOptions {
            selector: Some(text("selector").to_owned()),
            ..Default::default()
        };
        let _ = rollout::expose_service(object, &options);
        let _ = rollout::migrate::cloneset_from_deployment(object, "cs", true);
        let _ = rollout::describe_actions(object);
        let _ = rollout::job_from_advanced_cron_job(object, "job", object["broadcast"] == true);
        let _ = rollout::container_recreate_request(object, "r", &arguments);
        let _ = rollout::working_container(object, object["sidecar"].as_str().unwrap_or_default());
        let _ = rollout::is_paused(object);
        if let Ok(set) = serde_json::from_value::<CloneSet>(object.clone()) {
            let _ = rollout::cloneset_status(&set);
            if let Ok(patch) = rollout::scale_down_patch(&set, &arguments, &arguments) {
                assert_eq!(patch[0]["op"], "test");
            }
        }
        if let Ok(set) = serde_json::from_value::<StatefulSet>(object.clone()) {
            let _ = rollout::advanced_statefulset_status(&set);
        }
        if let Ok(set) = serde_json::from_value::<DaemonSet>(object.clone()) {
            let _ = rollout::advanced_daemonset_status(&set);
        }
    }
    let revisions: Vec<k8s_openapi::api::apps::v1::ControllerRevision> =
        objects.iter().filter_map(|o| serde_json::from_value(o.clone()).ok()).collect();
    let refs: Vec<_> = revisions.iter().collect();
    let _ = rollout::history(&refs);
    if let Ok((_, patch)) = rollout::undo_patch(&refs, 0, "1") {
        assert_eq!(patch[0]["value"], Value::from("1"));
    }
});
