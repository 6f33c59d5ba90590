//! `kubectl kruise migrate CloneSet --from Deployment`, without IO: the CloneSet made from a
//! Deployment (`--create`), and each step of moving replicas from the Deployment to the
//! CloneSet (upstream's order: the CloneSet grows by at most `--max-surge` beyond what the
//! Deployment has given up, and the Deployment shrinks only once every CloneSet pod is
//! available and both controllers have seen their latest spec, so the pods serving never
//! drop below the Deployment's count).

use serde_json::{Value, json};

/// Why a migration cannot start or go on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MigrateError {
    /// `--replicas` is zero (upstream: `invalid replicas 0`).
    #[error("invalid replicas {0}")]
    InvalidReplicas(i32),
    /// `--replicas` asks for more than the Deployment has left to give.
    #[error("--replicas {wanted} is more than deployment/{name} has: {has} (spec.replicas)")]
    MoreThanTheDeploymentHas {
        /// The Deployment's name.
        name: String,
        /// `--replicas`.
        wanted: i32,
        /// The Deployment's `spec.replicas`.
        has: i32,
    },
    /// The Deployment's `spec.replicas` went below what the migration still has to take.
    #[error(
        "deployment/{name} has {has} replicas (spec.replicas) and {left} more are to be migrated: something else scaled it in"
    )]
    DeploymentShrank {
        /// The Deployment's name.
        name: String,
        /// Its `spec.replicas` now.
        has: i32,
        /// Replicas the migration still has to take from it.
        left: i32,
    },
}

/// The CloneSet `name` a `--create` makes from `deployment` (apps/v1, as read): its labels,
/// annotations (less kubectl's and the Deployment controller's own), selector, template,
/// `revisionHistoryLimit` and `minReadySeconds`; the `Recreate` update type with the
/// Deployment's `paused`, `maxUnavailable` and `maxSurge`. `replicas` is 0 unless `copy`
/// (`--copy`) asks for the Deployment's, so that the new CloneSet does not double the pods
/// before the migration moves them (what upstream's help text promises; its code always
/// copies).
pub fn cloneset_from_deployment(deployment: &Value, name: &str, copy: bool) -> Value {
    let meta = &deployment["metadata"];
    let spec = &deployment["spec"];
    let mut annotations = meta["annotations"].as_object().cloned().unwrap_or_default();
    annotations.retain(|key, _| {
        key != "kubectl.kubernetes.io/last-applied-configuration"
            && key != "deployment.kubernetes.io/revision"
    });
    let mut metadata = json!({"name": name, "namespace": meta["namespace"]});
    if let Some(labels) = meta["labels"].as_object().filter(|l| !l.is_empty()) {
        metadata["labels"] = Value::Object(labels.clone());
    }
    if !annotations.is_empty() {
        metadata["annotations"] = Value::Object(annotations);
    }
    let mut update_strategy = json!({"type": "Recreate"});
    if spec["paused"].as_bool() == Some(true) {
        update_strategy["paused"] = json!(true);
    }
    for key in ["maxUnavailable", "maxSurge"] {
        let value = &spec["strategy"]["rollingUpdate"][key];
        if !value.is_null() {
            update_strategy[key] = value.clone();
        }
    }
    let replicas = if copy { spec["replicas"].as_i64().unwrap_or(1) } else { 0 };
    let mut out = json!({
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "selector": spec["selector"],
            "template": spec["template"],
            "updateStrategy": update_strategy,
        },
    });
    for key in ["revisionHistoryLimit", "minReadySeconds"] {
        if !spec[key].is_null() {
            out["spec"][key] = spec[key].clone();
        }
    }
    out
}

/// A workload's replicas as the migration reads them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Replicas {
    /// `metadata.generation`.
    pub generation: i64,
    /// `status.observedGeneration`.
    pub observed_generation: i64,
    /// `spec.replicas`.
    pub replicas: i32,
    /// `status.availableReplicas`.
    pub available: i32,
}

impl Replicas {
    /// Read from a Deployment or a CloneSet as JSON.
    pub fn of(object: &Value) -> Self {
        let int = |v: &Value| v.as_i64().unwrap_or(0);
        let small = |v: &Value| i32::try_from(int(v)).unwrap_or(i32::MAX);
        Self {
            generation: int(&object["metadata"]["generation"]),
            observed_generation: int(&object["status"]["observedGeneration"]),
            replicas: object["spec"]["replicas"]
                .as_i64()
                .map_or(1, |r| i32::try_from(r).unwrap_or(i32::MAX)),
            available: small(&object["status"]["availableReplicas"]),
        }
    }

    fn caught_up(&self) -> bool {
        self.observed_generation >= self.generation
    }
}

/// A migration under way: how many replicas it moves and has moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    /// Replicas to move (`--replicas`, or all of the Deployment's).
    pub target: i32,
    /// At most this many CloneSet replicas beyond what the Deployment has given up
    /// (`--max-surge`, at least 1).
    pub max_surge: i32,
    /// Replicas taken from the Deployment so far.
    pub scaled_in: i32,
    /// Replicas added to the CloneSet so far.
    pub scaled_out: i32,
}

impl Migration {
    /// A migration of `replicas` (`None`: all of the Deployment's) with `max_surge`, checked
    /// against the Deployment.
    pub fn start(
        deployment_name: &str,
        deployment: &Replicas,
        replicas: Option<i32>,
        max_surge: i32,
    ) -> Result<Self, MigrateError> {
        let target = replicas.unwrap_or(deployment.replicas);
        if target == 0 {
            return Err(MigrateError::InvalidReplicas(0));
        }
        if target > deployment.replicas {
            return Err(MigrateError::MoreThanTheDeploymentHas {
                name: deployment_name.to_owned(),
                wanted: target,
                has: deployment.replicas,
            });
        }
        Ok(Self { target, max_surge: max_surge.max(1), scaled_in: 0, scaled_out: 0 })
    }

    /// Every replica moved.
    pub fn done(&self) -> bool {
        self.scaled_in >= self.target && self.scaled_out >= self.target
    }
}

/// What to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MigrationStep {
    /// Set the CloneSet's `spec.replicas`.
    ScaleCloneSet {
        /// The new value.
        replicas: i32,
        /// How many that adds.
        by: i32,
    },
    /// Set the Deployment's `spec.replicas`.
    ScaleDeployment {
        /// The new value.
        replicas: i32,
        /// How many that takes away.
        by: i32,
    },
    /// Nothing yet: wait for what the message says.
    Wait(String),
    /// Every replica moved.
    Done,
}

/// The next step of `migration`, given both workloads as they are now. The CloneSet grows
/// first, by at most `max_surge` beyond what the Deployment has given up; the Deployment
/// then shrinks by what the CloneSet added, once every CloneSet pod is available and both
/// controllers have observed their latest generation.
pub fn migration_step(
    migration: &Migration,
    deployment_name: &str,
    deployment: &Replicas,
    cloneset: &Replicas,
) -> Result<MigrationStep, MigrateError> {
    if migration.done() {
        return Ok(MigrationStep::Done);
    }
    if !deployment.caught_up() || !cloneset.caught_up() {
        return Ok(MigrationStep::Wait(
            "the controllers to observe the latest generations".to_owned(),
        ));
    }
    let left = migration.target - migration.scaled_in;
    if deployment.replicas < left {
        return Err(MigrateError::DeploymentShrank {
            name: deployment_name.to_owned(),
            has: deployment.replicas,
            left,
        });
    }
    let surge = migration.scaled_out - migration.scaled_in;
    let grow = (migration.max_surge - surge).min(migration.target - migration.scaled_out);
    if grow > 0 {
        return Ok(MigrationStep::ScaleCloneSet { replicas: cloneset.replicas + grow, by: grow });
    }
    let shrink = left.min(surge);
    if shrink > 0 {
        if cloneset.available < cloneset.replicas {
            return Ok(MigrationStep::Wait(format!(
                "the CloneSet's pods to be available ({} of {})",
                cloneset.available, cloneset.replicas
            )));
        }
        return Ok(MigrationStep::ScaleDeployment {
            replicas: deployment.replicas - shrink,
            by: shrink,
        });
    }
    Ok(MigrationStep::Done)
}

/// `migration` after `step` was written.
pub fn after(migration: &Migration, step: &MigrationStep) -> Migration {
    let mut next = *migration;
    match step {
        MigrationStep::ScaleCloneSet { by, .. } => next.scaled_out += by,
        MigrationStep::ScaleDeployment { by, .. } => next.scaled_in += by,
        MigrationStep::Wait(_) | MigrationStep::Done => {}
    }
    next
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"},
                         "annotations": {"deployment.kubernetes.io/revision": "3",
                                         "kubectl.kubernetes.io/last-applied-configuration": "{}",
                                         "team": "a"}},
            "spec": {"replicas": 5, "paused": true, "minReadySeconds": 4,
                     "selector": {"matchLabels": {"app": "web"}},
                     "strategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 2}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "main", "image": "web:v1"}]}}}
        })
    }

    #[test]
    fn create_copies_what_a_cloneset_has_and_starts_at_zero() {
        let set = cloneset_from_deployment(&deployment(), "web-cs", false);
        assert_eq!(
            set["metadata"],
            json!({"name": "web-cs", "namespace": "shop",
            "labels": {"app": "web"}, "annotations": {"team": "a"}})
        );
        assert_eq!(set["spec"]["replicas"], 0);
        assert_eq!(set["spec"]["selector"], deployment()["spec"]["selector"]);
        assert_eq!(set["spec"]["template"], deployment()["spec"]["template"]);
        assert_eq!(set["spec"]["minReadySeconds"], 4);
        assert_eq!(
            set["spec"]["updateStrategy"],
            json!({"type": "Recreate", "paused": true, "maxUnavailable": "25%", "maxSurge": 2})
        );
        assert_eq!(cloneset_from_deployment(&deployment(), "x", true)["spec"]["replicas"], 5);
    }

    #[test]
    fn the_target_is_checked_against_the_deployment() {
        let d = Replicas { replicas: 5, ..Default::default() };
        assert_eq!(Migration::start("web", &d, Some(0), 1), Err(MigrateError::InvalidReplicas(0)));
        let err = Migration::start("web", &d, Some(7), 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--replicas 7 is more than deployment/web has: 5 (spec.replicas)"
        );
        let all = Migration::start("web", &d, None, 0).expect("all");
        assert_eq!((all.target, all.max_surge), (5, 1));
    }

    /// Two workloads' controllers that catch up at once and make a pod available `lag` steps
    /// after it is asked for.
    fn run(
        replicas: i32,
        target: Option<i32>,
        surge: i32,
        lag: usize,
    ) -> Result<(), TestCaseError> {
        let mut d =
            Replicas { generation: 1, observed_generation: 1, replicas, available: replicas };
        let mut c = Replicas { generation: 1, observed_generation: 1, replicas: 0, available: 0 };
        let mut m = Migration::start("web", &d, target, surge).expect("starts");
        let mut pending: Vec<usize> = Vec::new();
        for _ in 0..(200 + 10 * replicas) {
            // Pods asked for earlier become available.
            pending.iter_mut().for_each(|age| *age += 1);
            let ready = pending.iter().filter(|age| **age > lag).count();
            pending.retain(|age| *age <= lag);
            c.available += i32::try_from(ready).unwrap_or(0);
            let step = migration_step(&m, "web", &d, &c).expect("no error");
            match &step {
                MigrationStep::Done => break,
                MigrationStep::Wait(_) => {}
                MigrationStep::ScaleCloneSet { replicas, by } => {
                    prop_assert_eq!(*replicas, c.replicas + by);
                    c.replicas = *replicas;
                    pending.extend(std::iter::repeat_n(0, usize::try_from(*by).unwrap_or(0)));
                }
                MigrationStep::ScaleDeployment { replicas, by } => {
                    prop_assert_eq!(*replicas, d.replicas - by);
                    d.replicas = *replicas;
                    d.available = *replicas;
                }
            }
            m = after(&m, &step);
            // Serving never drops below what the Deployment had.
            prop_assert!(d.available + c.available >= replicas, "{d:?} {c:?}");
            // The surge holds.
            prop_assert!(m.scaled_out - m.scaled_in <= m.max_surge);
            prop_assert!(m.scaled_out <= m.target && m.scaled_in <= m.target);
        }
        prop_assert!(m.done(), "{m:?}");
        prop_assert_eq!(d.replicas, replicas - m.target);
        prop_assert_eq!(c.replicas, m.target);
        Ok(())
    }

    proptest! {
        #[test]
        fn migrations_finish_and_never_drop_serving_pods(
            replicas in 1i32..12,
            part in proptest::option::of(1i32..12),
            surge in 0i32..4,
            lag in 0usize..4,
        ) {
            let target = part.map(|p| p.min(replicas));
            run(replicas, target, surge, lag)?;
        }
    }

    #[test]
    fn a_deployment_scaled_in_by_someone_else_stops_the_migration() {
        let m = Migration { target: 4, max_surge: 1, scaled_in: 1, scaled_out: 1 };
        let d = Replicas { replicas: 2, ..Default::default() };
        let c = Replicas { replicas: 1, available: 1, ..Default::default() };
        let err = migration_step(&m, "web", &d, &c).unwrap_err();
        assert!(err.to_string().starts_with("deployment/web has 2 replicas"), "{err}");
    }
}
