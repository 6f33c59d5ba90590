//! Pod template defaults as upstream OpenKruise's `defaults.SetDefaultPodSpec` applies them
//! (Kubernetes' `SetDefaults_PodSpec`, `SetDefaults_Container`, probe, handler, volume and
//! resource-list defaults), so that a template defaulted here is byte for byte the template the
//! Go webhook stores, and revision hashes agree.
//!
//! Two things differ from a plain Kubernetes pod: regular containers get
//! `imagePullPolicy: Always` when none is set whatever the tag (upstream does this so that
//! in-place image updates always pull), and pod-only defaults (`enableServiceLinks`, requests
//! from limits) are not applied to templates.
//!
//! Quantities in resource lists are rounded up to milli-units and written in Go's canonical
//! form, as the webhook's JSON round trip writes them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, EnvVar, EphemeralContainer, HTTPGetAction, Lifecycle, PersistentVolumeClaim,
    PersistentVolumeClaimStatus, PodSecurityContext, PodSpec, Probe, Volume,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::revision::quantity::Quantity as GoQuantity;

/// The termination message path Kubernetes defaults to.
pub const DEFAULT_TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";
/// The scheduler Kubernetes defaults to.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
/// The grace period Kubernetes defaults to, in seconds.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;
/// The file mode secret, configMap, downwardAPI and projected volumes default to (0644).
pub const DEFAULT_VOLUME_MODE: i32 = 0o644;
/// The expiration a projected service account token defaults to, in seconds.
pub const DEFAULT_TOKEN_EXPIRATION_SECONDS: i64 = 3600;

/// Options of [`default_pod_spec_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PodDefaultsOptions {
    /// Upstream's `DefaultHostNetworkHostPortsInPodTemplates` gate (off by default): with host
    /// networking, container ports without a host port get the container port as host port.
    pub host_network_host_ports: bool,
}

impl PodDefaultsOptions {
    /// The options with the host-network port gate set as given.
    pub fn with_host_network_host_ports(mut self, on: bool) -> Self {
        self.host_network_host_ports = on;
        self
    }
}

/// How a workload's pod template is defaulted at admission, for every kind that defaults one
/// (CloneSet, Advanced StatefulSet, BroadcastJob, UnitedDeployment, AdvancedCronJob): upstream's
/// `TemplateNoDefaults` and `DefaultHostNetworkHostPortsInPodTemplates` gates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TemplateDefaults {
    /// `TemplateNoDefaults`: the templates are never defaulted.
    pub skip: bool,
    /// How a pod template is defaulted when it is.
    pub pod: PodDefaultsOptions,
}

impl TemplateDefaults {
    /// Templates defaulted as upstream's defaults gates do.
    pub fn new(template_no_defaults: bool, host_network_host_ports: bool) -> Self {
        Self {
            skip: template_no_defaults,
            pod: PodDefaultsOptions::default()
                .with_host_network_host_ports(host_network_host_ports),
        }
    }

    /// `TemplateNoDefaults` on: templates are left as written.
    pub fn none() -> Self {
        Self::new(true, false)
    }
}

/// Applies upstream's `SetDefaultPodSpec` with its default gates.
pub fn default_pod_spec(spec: &mut PodSpec) {
    default_pod_spec_with(spec, PodDefaultsOptions::default());
}

/// Applies upstream's `SetDefaultPodSpec`.
pub fn default_pod_spec_with(spec: &mut PodSpec, options: PodDefaultsOptions) {
    // SetDefaults_PodSpec.
    set_if_empty(&mut spec.dns_policy, "ClusterFirst");
    set_if_empty(&mut spec.restart_policy, "Always");
    if spec.security_context.is_none() {
        spec.security_context = Some(PodSecurityContext::default());
    }
    if spec.termination_grace_period_seconds.is_none() {
        spec.termination_grace_period_seconds = Some(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
    }
    set_if_empty(&mut spec.scheduler_name, DEFAULT_SCHEDULER_NAME);

    if options.host_network_host_ports && spec.host_network == Some(true) {
        default_host_network_ports(&mut spec.containers);
        if let Some(init) = &mut spec.init_containers {
            default_host_network_ports(init);
        }
    }

    for volume in spec.volumes.iter_mut().flatten() {
        default_volume(volume);
    }
    for container in spec.init_containers.iter_mut().flatten() {
        default_container(container);
        default_container_parts(container);
    }
    for container in &mut spec.containers {
        // Upstream pulls regular containers always, so in-place image updates take effect.
        set_if_empty(&mut container.image_pull_policy, "Always");
        default_container(container);
        default_container_parts(container);
    }
    for container in spec.ephemeral_containers.iter_mut().flatten() {
        default_ephemeral_container_parts(container);
    }
    if let Some(overhead) = &mut spec.overhead {
        default_resource_list(overhead);
    }
}

/// Upstream's defaults for a volume claim template: `status.phase: Pending` and resource lists
/// rounded (`SetDefaults_PersistentVolumeClaim` and `SetDefaults_ResourceList`).
pub fn default_volume_claim_template(pvc: &mut PersistentVolumeClaim) {
    let status = pvc.status.get_or_insert_with(PersistentVolumeClaimStatus::default);
    set_if_empty(&mut status.phase, "Pending");
    if let Some(capacity) = &mut status.capacity {
        default_resource_list(capacity);
    }
    if let Some(resources) = pvc.spec.as_mut().and_then(|s| s.resources.as_mut()) {
        if let Some(limits) = &mut resources.limits {
            default_resource_list(limits);
        }
        if let Some(requests) = &mut resources.requests {
            default_resource_list(requests);
        }
    }
}

fn set_if_empty(field: &mut Option<String>, value: &str) {
    if field.as_deref().unwrap_or("").is_empty() {
        *field = Some(value.to_owned());
    }
}

fn default_host_network_ports(containers: &mut [Container]) {
    for container in containers {
        for port in container.ports.iter_mut().flatten() {
            if port.host_port.unwrap_or(0) == 0 {
                port.host_port = Some(port.container_port);
            }
        }
    }
}

/// `SetDefaults_Container`: pull policy from the image tag, termination message defaults.
fn default_container(container: &mut Container) {
    if container.image_pull_policy.as_deref().unwrap_or("").is_empty() {
        let image = container.image.as_deref().unwrap_or("");
        let policy = if pulls_latest(image) { "Always" } else { "IfNotPresent" };
        container.image_pull_policy = Some(policy.to_owned());
    }
    set_if_empty(&mut container.termination_message_path, DEFAULT_TERMINATION_MESSAGE_PATH);
    set_if_empty(&mut container.termination_message_policy, "File");
}

/// Ports, env, resources, probes and lifecycle handlers of a container.
fn default_container_parts(c: &mut Container) {
    for port in c.ports.iter_mut().flatten() {
        set_if_empty(&mut port.protocol, "TCP");
    }
    default_env(c.env.as_deref_mut());
    if let Some(resources) = &mut c.resources {
        if let Some(limits) = &mut resources.limits {
            default_resource_list(limits);
        }
        if let Some(requests) = &mut resources.requests {
            default_resource_list(requests);
        }
    }
    for probe in
        [&mut c.liveness_probe, &mut c.readiness_probe, &mut c.startup_probe].into_iter().flatten()
    {
        default_probe(probe);
    }
    if let Some(lifecycle) = &mut c.lifecycle {
        default_lifecycle(lifecycle);
    }
}

/// The same for an ephemeral container (upstream applies no `SetDefaults_Container` here).
fn default_ephemeral_container_parts(c: &mut EphemeralContainer) {
    for port in c.ports.iter_mut().flatten() {
        set_if_empty(&mut port.protocol, "TCP");
    }
    default_env(c.env.as_deref_mut());
    if let Some(resources) = &mut c.resources {
        if let Some(limits) = &mut resources.limits {
            default_resource_list(limits);
        }
        if let Some(requests) = &mut resources.requests {
            default_resource_list(requests);
        }
    }
    for probe in
        [&mut c.liveness_probe, &mut c.readiness_probe, &mut c.startup_probe].into_iter().flatten()
    {
        default_probe(probe);
    }
    if let Some(lifecycle) = &mut c.lifecycle {
        default_lifecycle(lifecycle);
    }
}

fn default_env(env: Option<&mut [EnvVar]>) {
    for var in env.into_iter().flatten() {
        if let Some(field_ref) = var.value_from.as_mut().and_then(|v| v.field_ref.as_mut()) {
            set_if_empty(&mut field_ref.api_version, "v1");
        }
    }
}

fn default_lifecycle(lifecycle: &mut Lifecycle) {
    for handler in [&mut lifecycle.post_start, &mut lifecycle.pre_stop].into_iter().flatten() {
        if let Some(http) = &mut handler.http_get {
            default_http_get(http);
        }
    }
}

/// `SetDefaults_Probe` and, for HTTP probes, `SetDefaults_HTTPGetAction`.
fn default_probe(probe: &mut Probe) {
    let zero_to = |field: &mut Option<i32>, value: i32| {
        if field.unwrap_or(0) == 0 {
            *field = Some(value);
        }
    };
    zero_to(&mut probe.timeout_seconds, 1);
    zero_to(&mut probe.period_seconds, 10);
    zero_to(&mut probe.success_threshold, 1);
    zero_to(&mut probe.failure_threshold, 3);
    if let Some(http) = &mut probe.http_get {
        default_http_get(http);
    }
}

fn default_http_get(http: &mut HTTPGetAction) {
    set_if_empty(&mut http.path, "/");
    set_if_empty(&mut http.scheme, "HTTP");
}

/// `SetDefaultPodVolumes` for one volume.
fn default_volume(volume: &mut Volume) {
    // SetDefaults_Volume: a volume with no source is an emptyDir. Judged on the serialised
    // form so that sources added to Kubernetes later count too.
    let has_source = serde_json::to_value(&*volume)
        .ok()
        .and_then(|v| v.as_object().map(|m| m.keys().any(|k| k != "name")))
        .unwrap_or(true);
    if !has_source {
        volume.empty_dir = Some(Default::default());
    }
    if let Some(host_path) = &mut volume.host_path
        && host_path.type_.is_none()
    {
        host_path.type_ = Some(String::new());
    }
    if let Some(secret) = &mut volume.secret
        && secret.default_mode.is_none()
    {
        secret.default_mode = Some(DEFAULT_VOLUME_MODE);
    }
    if let Some(downward) = &mut volume.downward_api {
        if downward.default_mode.is_none() {
            downward.default_mode = Some(DEFAULT_VOLUME_MODE);
        }
        for item in downward.items.iter_mut().flatten() {
            if let Some(field_ref) = &mut item.field_ref {
                set_if_empty(&mut field_ref.api_version, "v1");
            }
        }
    }
    if let Some(config_map) = &mut volume.config_map
        && config_map.default_mode.is_none()
    {
        config_map.default_mode = Some(DEFAULT_VOLUME_MODE);
    }
    if let Some(projected) = &mut volume.projected {
        if projected.default_mode.is_none() {
            projected.default_mode = Some(DEFAULT_VOLUME_MODE);
        }
        for source in projected.sources.iter_mut().flatten() {
            if let Some(downward) = &mut source.downward_api {
                for item in downward.items.iter_mut().flatten() {
                    if let Some(field_ref) = &mut item.field_ref {
                        set_if_empty(&mut field_ref.api_version, "v1");
                    }
                }
            }
            if let Some(token) = &mut source.service_account_token
                && token.expiration_seconds.is_none()
            {
                token.expiration_seconds = Some(DEFAULT_TOKEN_EXPIRATION_SECONDS);
            }
        }
    }
}

/// `SetDefaults_ResourceList`: every quantity rounded up to milli-units, written canonically.
/// Quantities that do not parse are left as they are.
pub fn default_resource_list(list: &mut BTreeMap<String, Quantity>) {
    for quantity in list.values_mut() {
        if let Some(text) = round_up_to_milli(&quantity.0) {
            quantity.0 = text;
        }
    }
}

/// A quantity rounded up (away from zero) to a multiple of 10^-3, in Go's canonical form.
pub fn round_up_to_milli(text: &str) -> Option<String> {
    let canonical = GoQuantity::parse(text).ok()?.to_canonical();
    let (sign, rest) = match canonical.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", canonical.as_str()),
    };
    let digits_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let (digits, suffix) = rest.split_at(digits_end);
    let divisor: u128 = match suffix {
        "n" | "e-9" => 1_000_000,
        "u" | "e-6" => 1_000,
        _ => return Some(canonical),
    };
    let value: u128 = digits.parse().ok()?;
    let millis = value.div_ceil(divisor);
    let milli_suffix = if suffix.starts_with('e') { "e-3" } else { "m" };
    GoQuantity::parse(&format!("{sign}{millis}{milli_suffix}")).ok().map(|q| q.to_canonical())
}

/// Whether Kubernetes defaults a container with this image to `imagePullPolicy: Always`: the
/// reference parses and its tag is `latest`, or it has neither tag nor digest.
pub fn pulls_latest(image: &str) -> bool {
    match crate::image::ImageRef::parse(image) {
        Ok(reference) => {
            reference.tag.as_deref() == Some("latest")
                || (reference.tag.is_none() && reference.digest.is_none())
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags() {
        assert!(pulls_latest("nginx"));
        assert!(pulls_latest("nginx:latest"));
        assert!(pulls_latest("registry.example.com:5000/team/nginx"));
        assert!(!pulls_latest("nginx:stable-alpine"));
        assert!(!pulls_latest("localhost:5000/nginx:1.2"));
        assert!(!pulls_latest(
            "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        ));
        assert!(!pulls_latest("Nginx"));
        assert!(!pulls_latest(""));
        assert!(!pulls_latest("a b"));
    }

    #[test]
    fn quantities_round_up_to_milli_units() {
        assert_eq!(round_up_to_milli("0.0001").as_deref(), Some("1m"));
        assert_eq!(round_up_to_milli("100u").as_deref(), Some("1m"));
        assert_eq!(round_up_to_milli("1001u").as_deref(), Some("2m"));
        assert_eq!(round_up_to_milli("1000000n").as_deref(), Some("1m"));
        assert_eq!(round_up_to_milli("0.5Gi").as_deref(), Some("512Mi"));
        assert_eq!(round_up_to_milli("1000m").as_deref(), Some("1"));
        assert_eq!(round_up_to_milli("250m").as_deref(), Some("250m"));
        assert_eq!(round_up_to_milli("bogus"), None);
    }
}
