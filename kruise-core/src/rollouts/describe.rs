//! `kubectl kruise describe rollout`: a Rollout and its BatchRelease as text, in the layout of
//! `kubectl describe` (aligned `Key:  value` lines, then tables).

use std::fmt::Write as _;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::rollouts::v1beta1::{BatchRelease, Rollout};

fn int_or_string(value: &IntOrString) -> String {
    match value {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

/// Pads the rows of a table into columns two spaces apart, indented by two.
fn table(out: &mut String, rows: &[Vec<String>]) {
    let widths: Vec<usize> = (0..rows.first().map_or(0, Vec::len))
        .map(|c| rows.iter().map(|r| r.get(c).map_or(0, |s| s.chars().count())).max().unwrap_or(0))
        .collect();
    for row in rows {
        let mut line = String::from("  ");
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<width$}  ", width = widths[i]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// The Rollout (and its BatchRelease, when there is one) as `kubectl describe` would lay it
/// out: where it stands, each step with the current one marked, its traffic routing, the
/// canary's pods, the conditions, and the batch under way.
pub fn describe(rollout: &Rollout, batch_release: Option<&BatchRelease>) -> String {
    let mut out = String::new();
    let status = rollout.status.clone().unwrap_or_default();
    let meta = &rollout.metadata;
    let reference = &rollout.spec.workload_ref;
    let mut line = |key: &str, value: &str| {
        let _ = writeln!(out, "{:<14}{value}", format!("{key}:"));
    };
    line("Name", meta.name.as_deref().unwrap_or_default());
    line("Namespace", meta.namespace.as_deref().unwrap_or_default());
    line("Workload", &format!("{} {}/{}", reference.api_version, reference.kind, reference.name));
    line("Phase", status.phase.as_ref().map(|p| p.as_str()).unwrap_or("<none>"));
    line("Message", &status.message);
    let strategy = &rollout.spec.strategy;
    let style = match super::rollout::release_style(rollout) {
        super::ReleaseStyle::BlueGreen => "BlueGreen",
        super::ReleaseStyle::Canary => "Canary",
        super::ReleaseStyle::Partition => "Partition",
    };
    line("Strategy", &format!("{style}{}", if strategy.paused { " (paused)" } else { "" }));
    if rollout.spec.disabled {
        line("Disabled", "true");
    }
    let canary = strategy.canary.clone().or_else(|| {
        strategy.blue_green.clone().map(|b| kruise_api::rollouts::v1beta1::CanaryStrategy {
            steps: b.steps,
            traffic_routings: b.traffic_routings,
            ..Default::default()
        })
    });
    let common = status
        .canary_status
        .as_ref()
        .map(|c| c.common.clone())
        .or_else(|| status.blue_green_status.as_ref().map(|b| b.common.clone()));
    let current = common.as_ref().map_or(0, |c| c.current_step_index);
    let state = common.as_ref().map(|c| c.current_step_state.to_string()).unwrap_or_default();
    if let Some(canary) = &canary {
        let _ = writeln!(out, "Steps:");
        let mut rows = vec![vec![
            "STEP".to_owned(),
            "REPLICAS".to_owned(),
            "TRAFFIC".to_owned(),
            "PAUSE".to_owned(),
            "STATE".to_owned(),
        ]];
        for (i, step) in canary.steps.iter().enumerate() {
            let index = i as i32 + 1;
            let traffic = match (&step.traffic, step.matches.is_empty()) {
                (Some(t), true) => t.clone(),
                (Some(t), false) => format!("{t} + matches"),
                (None, false) => "matches".to_owned(),
                (None, true) => "-".to_owned(),
            };
            let pause = match step.pause.duration {
                Some(seconds) => format!("{seconds}s"),
                None => "approval".to_owned(),
            };
            rows.push(vec![
                if index == current { format!("* {index}") } else { format!("  {index}") },
                step.replicas.as_ref().map(int_or_string).unwrap_or_else(|| "-".to_owned()),
                traffic,
                pause,
                if index == current { state.clone() } else { String::new() },
            ]);
        }
        let mut text = String::new();
        table(&mut text, &rows);
        out.push_str(&text);
        for routing in &canary.traffic_routings {
            let mut via = Vec::new();
            if let Some(ingress) = &routing.ingress {
                via.push(format!("Ingress {}", ingress.name));
            }
            if let Some(route) = routing.gateway.as_ref().and_then(|g| g.http_route_name.as_ref()) {
                via.push(format!("HTTPRoute {route}"));
            }
            let _ = writeln!(
                out,
                "{:<14}Service {}{}{}",
                "Traffic:",
                routing.service,
                via.iter().map(|v| format!(", {v}")).collect::<String>(),
                if routing.grace_period_seconds > 0 {
                    format!(" (grace {}s)", routing.grace_period_seconds)
                } else {
                    String::new()
                }
            );
        }
    }
    if let Some(c) = &status.canary_status {
        let _ = writeln!(
            out,
            "{:<14}{}/{} ready, revision {} (stable {})",
            "Canary:",
            c.canary_ready_replicas,
            c.canary_replicas,
            if c.canary_revision.is_empty() { "<none>" } else { &c.canary_revision },
            if c.common.stable_revision.is_empty() { "<none>" } else { &c.common.stable_revision },
        );
    }
    if let Some(br) = batch_release {
        let s = br.status.clone().unwrap_or_default();
        let total = br.spec.release_plan.batches.len();
        let _ = writeln!(
            out,
            "{:<14}{} {}, batch {}/{} {}, {} updated ({} ready)",
            "BatchRelease:",
            br.metadata.name.as_deref().unwrap_or_default(),
            s.phase.as_ref().map(|p| p.as_str()).unwrap_or("<none>"),
            s.canary_status.current_batch + 1,
            total,
            s.canary_status.current_batch_state.as_ref().map(|b| b.as_str()).unwrap_or("<none>"),
            s.canary_status.updated_replicas,
            s.canary_status.updated_ready_replicas,
        );
    }
    if !status.conditions.is_empty() {
        let _ = writeln!(out, "Conditions:");
        let mut rows = vec![vec![
            "TYPE".to_owned(),
            "STATUS".to_owned(),
            "REASON".to_owned(),
            "MESSAGE".to_owned(),
        ]];
        for c in &status.conditions {
            rows.push(vec![c.type_.clone(), c.status.clone(), c.reason.clone(), c.message.clone()]);
        }
        table(&mut out, &rows);
    }
    out
}
