//! `TemplateNoDefaults` and `DefaultHostNetworkHostPortsInPodTemplates` for every kind whose
//! webhook defaults a pod template: CloneSet (both versions), Advanced StatefulSet,
//! BroadcastJob, UnitedDeployment and AdvancedCronJob (both of its templates). A host-network
//! template's container port gets a host port only with the second gate, and nothing is
//! defaulted with the first.

use kruise_api::apps::{v1alpha1, v1beta1};
use kruise_core::admission::pod_defaults::TemplateDefaults;
use kruise_core::statefulset::admission::AdmissionGates;
use serde_json::{Value, json};

fn pod_template() -> Value {
    json!({"metadata": {"labels": {"app": "web"}},
           "spec": {"hostNetwork": true,
                    "containers": [{"name": "main", "image": "nginx",
                                    "ports": [{"containerPort": 8080}]}]}})
}

/// Every kind's object with the template, defaulted as `template` says; each answer is the
/// pod spec as defaulted, named by kind.
fn defaulted(template: TemplateDefaults) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    let pod = pod_template();
    let selector = json!({"matchLabels": {"app": "web"}});

    let cloneset = |version: &str| {
        json!({"apiVersion": format!("apps.kruise.io/{version}"), "kind": "CloneSet",
               "metadata": {"name": "web"}, "spec": {"selector": selector, "template": pod}})
    };
    let options = kruise_core::cloneset::admission::DefaultingOptions::default()
        .with_template_defaults(!template.skip)
        .with_pod_options(template.pod);
    let mut cs: v1beta1::CloneSet = serde_json::from_value(cloneset("v1beta1")).expect("cloneset");
    kruise_core::cloneset::admission::default_cloneset_v1beta1_with(&mut cs, options);
    out.push(("CloneSet v1beta1", json!(cs.spec.template.spec)));
    let mut cs: v1alpha1::CloneSet =
        serde_json::from_value(cloneset("v1alpha1")).expect("cloneset");
    kruise_core::cloneset::admission::default_cloneset_v1alpha1_with(&mut cs, options);
    out.push(("CloneSet v1alpha1", json!(cs.spec.template.spec)));

    let mut sts: v1beta1::StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "web"}, "spec": {"selector": selector, "template": pod}}))
    .expect("statefulset");
    let gates = AdmissionGates::default()
        .with_template_no_defaults(template.skip)
        .with_host_network_host_ports(template.pod.host_network_host_ports);
    kruise_core::statefulset::admission::default_statefulset(&mut sts, None, gates);
    out.push(("Advanced StatefulSet", json!(sts.spec.template.spec)));

    let mut job: v1beta1::BroadcastJob = serde_json::from_value(json!({
        "metadata": {"name": "web"}, "spec": {"template": pod}}))
    .expect("broadcastjob");
    kruise_core::broadcastjob::admission::default_broadcast_job(&mut job, template);
    out.push(("BroadcastJob", json!(job.spec.template.spec)));

    let mut ud: v1beta1::UnitedDeployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": selector, "template": {"statefulSetTemplate": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"selector": selector, "template": pod}}}}}))
    .expect("uniteddeployment");
    kruise_core::uniteddeployment::admission::default_united_deployment(&mut ud, None, template);
    let sts = ud.spec.template.stateful_set_template.expect("template");
    out.push(("UnitedDeployment", json!(sts.spec.object.template.spec)));

    for (name, kind_template) in [
        ("AdvancedCronJob jobTemplate", json!({"jobTemplate": {"spec": {"template": pod}}})),
        (
            "AdvancedCronJob broadcastJobTemplate",
            json!({"broadcastJobTemplate": {"spec": {"template": pod}}}),
        ),
    ] {
        let mut acj: v1beta1::AdvancedCronJob = serde_json::from_value(json!({
            "metadata": {"name": "web"}, "spec": {"schedule": "* * * * *", "template": kind_template}}))
        .expect("advancedcronjob");
        kruise_core::advancedcronjob::admission::default_advanced_cron_job(
            &mut acj, None, template,
        );
        let t = &acj.spec.template;
        let spec = match &t.job_template {
            Some(job) => json!(job.spec.as_ref().and_then(|s| s.template.spec.clone())),
            None => json!(t.broadcast_job_template.as_ref().map(|b| b.spec.template.spec.clone())),
        };
        out.push((name, spec));
    }
    out
}

fn port(spec: &Value) -> &Value {
    &spec["containers"][0]["ports"][0]
}

#[test]
fn host_network_ports_are_defaulted_only_with_the_gate() {
    for (kind, spec) in defaulted(TemplateDefaults::default()) {
        assert_eq!(port(&spec)["protocol"], "TCP", "{kind}: the template is defaulted");
        assert_eq!(port(&spec)["hostPort"], Value::Null, "{kind}: no host port by default");
    }
    for (kind, spec) in defaulted(TemplateDefaults::new(false, true)) {
        assert_eq!(port(&spec)["hostPort"], 8080, "{kind}: the gate's host port");
    }
}

#[test]
fn template_no_defaults_leaves_every_template_as_written() {
    for (kind, spec) in defaulted(TemplateDefaults::new(true, true)) {
        assert_eq!(port(&spec), &json!({"containerPort": 8080}), "{kind}: not defaulted");
        assert_eq!(spec["dnsPolicy"], Value::Null, "{kind}: not defaulted");
    }
}
