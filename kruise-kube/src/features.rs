//! `--feature-gates`: upstream OpenKruise's gates (`pkg/features/kruise_features.go`) and Kruise
//! Rollout's (`RolloutHistory`, `AdvancedDeployment`, `AppendPodSelector`) with their defaults
//! and stages, parsed the way Kubernetes' component-base parses the flag.
//!
//! Parsing follows component-base's `featureGate.Set`: a comma-separated list of
//! `Name=bool`, names case-sensitive, booleans as Go's `strconv.ParseBool` reads them
//! (`1 t T TRUE true True 0 f F FALSE false False`), the last of repeated names winning, and
//! the special `AllAlpha` / `AllBeta` gates setting every Alpha / Beta gate not set explicitly.
//! Blank items are skipped.
//!
//! [`FeatureGates::parse`] then applies upstream's `SetDefaultFeatureGates` (see
//! [`FeatureGates::apply_dependencies`]), as kruise-manager does right after parsing its flags.
//!
//! Not reproduced: upstream's compatibility with the old `CUSTOM_RESOURCE_ENABLE` environment
//! variable (a non-empty list without `SidecarSet` turns `PodWebhook`'s default off). A caller
//! wanting it can `set("PodWebhook", false)` before [`FeatureGates::apply_dependencies`] when
//! the flag does not name `PodWebhook`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The maturity of a gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Stage {
    /// Off by default, may change or go away.
    Alpha,
    /// Usually on by default, well tested.
    Beta,
    /// Generally available; setting it is deprecated.
    Ga,
    /// Scheduled for removal.
    Deprecated,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Alpha => "ALPHA",
            Stage::Beta => "BETA",
            Stage::Ga => "GA",
            Stage::Deprecated => "DEPRECATED",
        })
    }
}

/// A known gate: its name, default and stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GateSpec {
    /// The gate's name as given to `--feature-gates`.
    pub name: &'static str,
    /// Whether it is on when not set.
    pub default: bool,
    /// Its maturity.
    pub stage: Stage,
}

const fn gate(name: &'static str, default: bool, stage: Stage) -> GateSpec {
    GateSpec { name, default, stage }
}

/// component-base's special gate turning every Alpha gate not set explicitly on or off.
pub const ALL_ALPHA: &str = "AllAlpha";
/// component-base's special gate turning every Beta gate not set explicitly on or off.
pub const ALL_BETA: &str = "AllBeta";

use Stage::{Alpha, Beta};

/// Every gate, in upstream's order, then component-base's two special gates.
const GATES: &[GateSpec] = &[
    gate("PodWebhook", true, Beta),
    gate("KruiseDaemon", true, Beta),
    gate("DaemonWatchingPod", true, Beta),
    gate("CloneSetShortHash", false, Alpha),
    gate("KruisePodReadinessGate", false, Alpha),
    gate("PreDownloadImageForInPlaceUpdate", false, Alpha),
    gate("CloneSetPartitionRollback", false, Alpha),
    gate("ResourcesDeletionProtection", false, Beta),
    gate("WorkloadSpread", true, Beta),
    gate("PodUnavailableBudgetDeleteGate", true, Beta),
    gate("PodUnavailableBudgetUpdateGate", false, Alpha),
    gate("TemplateNoDefaults", false, Alpha),
    gate("InPlaceUpdateEnvFromMetadata", true, Beta),
    gate("StatefulSetAutoDeletePVC", true, Beta),
    gate("SidecarSetPatchPodMetadataDefaultsAllowed", false, Alpha),
    gate("SidecarTerminator", false, Alpha),
    gate("PodProbeMarkerGate", true, Beta),
    gate("PreDownloadImageForDaemonSetUpdate", false, Alpha),
    gate("CloneSetEventHandlerOptimization", false, Alpha),
    gate("PreparingUpdateAsUpdate", false, Alpha),
    gate("ImagePullJobGate", false, Alpha),
    gate("ResourceDistributionGate", false, Beta),
    gate("DeletionProtectionForCRDCascadingGate", false, Alpha),
    gate("EnhancedLivenessProbe", false, Alpha),
    gate("RecreatePodWhenChangeVCTInCloneSetGate", false, Alpha),
    gate("StatefulSetStartOrdinal", false, Alpha),
    gate("PodIndexLabel", true, Beta),
    gate("EnableExternalCerts", false, Alpha),
    gate("StatefulSetAutoResizePVCGate", false, Alpha),
    gate("ForceDeleteTimeoutExpectationGate", false, Alpha),
    gate("InPlaceWorkloadVerticalScaling", false, Alpha),
    gate("EnablePodProbeMarkerOnServerless", false, Alpha),
    gate("EnableSortSidecarContainerByName", false, Alpha),
    gate("InPlacePodVerticalScaling", false, Alpha),
    gate("DefaultHostNetworkHostPortsInPodTemplates", false, Alpha),
    gate("DaemonSetPruneIneligibleNodes", false, Alpha),
    // Kruise Rollout's (`openkruise/rollouts` `pkg/feature`), served by the same manager.
    gate("RolloutHistory", false, Alpha),
    // Upstream's default is off, and its own manager manifest (`config/manager/manager.yaml`)
    // turns it on: a partition-style Deployment release cannot move without it.
    gate("AdvancedDeployment", true, Alpha),
    gate("AppendPodSelector", false, Alpha),
    gate(ALL_ALPHA, false, Alpha),
    gate(ALL_BETA, false, Beta),
];

/// Errors of `--feature-gates`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FeatureGateError {
    /// The gate is not one of upstream's.
    #[error("unrecognized feature gate: {gate}{}", did_you_mean(suggestions))]
    Unknown {
        /// The name as given.
        gate: String,
        /// Known gates with close names, closest first.
        suggestions: Vec<&'static str>,
    },
    /// An item has no `=value`.
    #[error("missing bool value for feature gate {gate}")]
    MissingValue {
        /// The name as given.
        gate: String,
    },
    /// The value is not a boolean.
    #[error("invalid value of feature gate {gate}={value}: expected true or false")]
    InvalidValue {
        /// The name as given.
        gate: String,
        /// The value as given.
        value: String,
    },
    /// The gate is on, and its feature is not built here.
    #[error("feature gate {gate} cannot be turned on: {why}")]
    NotBuilt {
        /// The gate.
        gate: &'static str,
        /// What is missing.
        why: &'static str,
    },
}

/// What kruise-rs does with one of upstream's gates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Support {
    /// It does what upstream's gate does, on and off.
    Built,
    /// What the gate turns on is how kruise-rs always works: named off, it is accepted with a
    /// warning at start that this changes nothing.
    AlwaysOn(&'static str),
    /// Its feature is not built: turning it on is refused; on without being named (upstream's
    /// default, `AllAlpha`/`AllBeta`), it is off here, with a warning at start.
    NotBuilt(&'static str),
}

/// The gates that are not [`Support::Built`].
const SUPPORT: &[(&str, Support)] = &[
    (
        "CloneSetEventHandlerOptimization",
        Support::NotBuilt(
            "the CloneSet controller wakes on every change of its pods; upstream's filter of pod updates is not built",
        ),
    ),
    (
        "ForceDeleteTimeoutExpectationGate",
        Support::AlwaysOn(
            "expectations not met within --expectation-timeout are always dropped (a Warning ExpectationTimeout Event), as this gate does upstream",
        ),
    ),
];

fn did_you_mean(suggestions: &[&str]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", suggestions.join(", "))
    }
}

/// The state of every gate.
#[derive(Clone, Debug)]
pub struct FeatureGates {
    /// The value of every known gate.
    values: BTreeMap<&'static str, bool>,
    /// Gates set explicitly, which `AllAlpha` / `AllBeta` leave alone.
    explicit: BTreeSet<&'static str>,
}

/// Equal when every gate has the same value (however it got it).
impl PartialEq for FeatureGates {
    fn eq(&self, other: &Self) -> bool {
        self.values == other.values
    }
}

impl Eq for FeatureGates {}

impl Default for FeatureGates {
    /// Upstream's defaults.
    fn default() -> Self {
        FeatureGates {
            values: GATES.iter().map(|g| (g.name, g.default)).collect(),
            explicit: BTreeSet::new(),
        }
    }
}

impl FeatureGates {
    /// Parses a `--feature-gates` value such as `"CloneSetShortHash=true, PodWebhook=false"`
    /// (empty: all defaults), then applies [`FeatureGates::apply_dependencies`].
    ///
    /// Then each gate is checked against what kruise-rs builds ([`FeatureGates::support`]):
    /// a gate whose feature is not built may not be named on; the error names the gate and
    /// why.
    pub fn parse(flag: &str) -> Result<Self, FeatureGateError> {
        let mut gates = FeatureGates::default();
        gates.set_from_flag(flag)?;
        gates.apply_dependencies();
        gates.check_support()?;
        Ok(gates)
    }

    /// What kruise-rs does with `gate`.
    pub fn support(gate: &str) -> Support {
        SUPPORT.iter().find(|(name, _)| *name == gate).map_or(Support::Built, |(_, s)| *s)
    }

    /// Refuses a [`Support::NotBuilt`] gate named on; turns off, with a warning, a not-built
    /// gate that is on without being named (by upstream's default, or `AllAlpha`/`AllBeta`);
    /// warns of a [`Support::AlwaysOn`] gate named off.
    pub fn check_support(&mut self) -> Result<(), FeatureGateError> {
        for (gate, support) in SUPPORT {
            let spec = GATES.iter().find(|g| g.name == *gate);
            let Some(spec) = spec else { continue };
            let on = self.enabled(gate);
            // Not named in the flag: on by upstream's default, or by `AllAlpha`/`AllBeta`.
            let by_default = !self.explicit.contains(gate);
            match support {
                Support::NotBuilt(why) if on && by_default => {
                    tracing::warn!(gate, why, "feature gate on by default upstream is off here");
                    self.values.insert(spec.name, false);
                }
                Support::NotBuilt(why) if on => {
                    return Err(FeatureGateError::NotBuilt { gate: spec.name, why });
                }
                Support::AlwaysOn(why) if !on && !by_default => {
                    tracing::warn!(gate, why, "feature gate turned off changes nothing here");
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Applies a further `--feature-gates` value on top of these gates, without applying
    /// dependencies (component-base's `Set`, for a repeated flag).
    pub fn set_from_flag(&mut self, flag: &str) -> Result<(), FeatureGateError> {
        let mut items: Vec<(&'static str, bool)> = Vec::new();
        for item in flag.split(',') {
            if item.trim().is_empty() {
                continue;
            }
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n.trim(), v.trim()),
                None => {
                    return Err(FeatureGateError::MissingValue { gate: item.trim().to_string() });
                }
            };
            let on = parse_go_bool(value).ok_or_else(|| FeatureGateError::InvalidValue {
                gate: name.to_string(),
                value: value.to_string(),
            })?;
            let spec = spec_of(name)?;
            items.push((spec.name, on));
        }
        // As in component-base, the special gates never override a gate named in the same
        // flag, whatever the order.
        let named: BTreeSet<&'static str> = items.iter().map(|(n, _)| *n).collect();
        self.explicit.extend(named.iter().filter(|n| **n != ALL_ALPHA && **n != ALL_BETA));
        for (name, on) in items {
            self.apply(name, on);
        }
        Ok(())
    }

    /// Whether `gate` is on; unknown gates are off.
    pub fn enabled(&self, gate: &str) -> bool {
        self.values.get(gate).copied().unwrap_or(false)
    }

    /// Sets one gate explicitly (no dependencies are applied). `AllAlpha` / `AllBeta` set
    /// every Alpha / Beta gate not set explicitly.
    pub fn set(&mut self, gate: &str, on: bool) -> Result<(), FeatureGateError> {
        let spec = spec_of(gate)?;
        if spec.name != ALL_ALPHA && spec.name != ALL_BETA {
            self.explicit.insert(spec.name);
        }
        self.apply(spec.name, on);
        Ok(())
    }

    fn apply(&mut self, name: &'static str, on: bool) {
        let stage = match name {
            ALL_ALPHA => Some(Stage::Alpha),
            ALL_BETA => Some(Stage::Beta),
            _ => None,
        };
        if let Some(stage) = stage {
            for g in GATES {
                let special = g.name == ALL_ALPHA || g.name == ALL_BETA;
                if g.stage == stage && !special && !self.explicit.contains(g.name) {
                    self.values.insert(g.name, on);
                }
            }
        } else if let Some(spec) = GATES.iter().find(|g| g.name == name)
            && matches!(spec.stage, Stage::Ga | Stage::Deprecated)
        {
            tracing::warn!(gate = name, value = on, stage = %spec.stage,
                "setting a {} feature gate; it will be removed in a future release", spec.stage);
        }
        self.values.insert(name, on);
    }

    /// Upstream's `SetDefaultFeatureGates`, applied after the flags are parsed:
    /// - `PodWebhook` off turns off `KruisePodReadinessGate`, `PodUnavailableBudgetDeleteGate`,
    ///   `PodUnavailableBudgetUpdateGate`, `WorkloadSpread`,
    ///   `SidecarSetPatchPodMetadataDefaultsAllowed`, `EnhancedLivenessProbe` and
    ///   `EnablePodProbeMarkerOnServerless`;
    /// - `KruiseDaemon` off turns off `PreDownloadImageForInPlaceUpdate`, `DaemonWatchingPod`,
    ///   `InPlaceUpdateEnvFromMetadata`, `PreDownloadImageForDaemonSetUpdate`,
    ///   `PodProbeMarkerGate`, `SidecarTerminator`, `ImagePullJobGate` and
    ///   `EnhancedLivenessProbe`;
    /// - either `PreDownloadImage…` gate on turns `ImagePullJobGate` on;
    /// - `ResourcesDeletionProtection` off turns off `DeletionProtectionForCRDCascadingGate`.
    pub fn apply_dependencies(&mut self) {
        fn force(gates: &mut FeatureGates, names: &[&'static str], on: bool) {
            for n in names {
                gates.explicit.insert(n);
                gates.values.insert(n, on);
            }
        }
        if !self.enabled("PodWebhook") {
            force(
                self,
                &[
                    "KruisePodReadinessGate",
                    "PodUnavailableBudgetDeleteGate",
                    "PodUnavailableBudgetUpdateGate",
                    "WorkloadSpread",
                    "SidecarSetPatchPodMetadataDefaultsAllowed",
                    "EnhancedLivenessProbe",
                    "EnablePodProbeMarkerOnServerless",
                ],
                false,
            );
        }
        if !self.enabled("KruiseDaemon") {
            force(
                self,
                &[
                    "PreDownloadImageForInPlaceUpdate",
                    "DaemonWatchingPod",
                    "InPlaceUpdateEnvFromMetadata",
                    "PreDownloadImageForDaemonSetUpdate",
                    "PodProbeMarkerGate",
                    "SidecarTerminator",
                    "ImagePullJobGate",
                    "EnhancedLivenessProbe",
                ],
                false,
            );
        }
        if self.enabled("PreDownloadImageForInPlaceUpdate")
            || self.enabled("PreDownloadImageForDaemonSetUpdate")
        {
            force(self, &["ImagePullJobGate"], true);
        }
        if !self.enabled("ResourcesDeletionProtection") {
            force(self, &["DeletionProtectionForCRDCascadingGate"], false);
        }
    }

    /// Every known gate with its default, in upstream's order (then `AllAlpha`, `AllBeta`).
    pub fn known() -> impl Iterator<Item = (&'static str, bool)> {
        GATES.iter().map(|g| (g.name, g.default))
    }

    /// The name, default and stage of a known gate.
    pub fn spec(gate: &str) -> Option<GateSpec> {
        GATES.iter().find(|g| g.name == gate).copied()
    }

    /// The gates whose value differs from the default, sorted by name.
    pub fn non_default(&self) -> impl Iterator<Item = (&'static str, bool)> + '_ {
        self.values.iter().filter_map(|(name, on)| {
            let default = GATES.iter().find(|g| g.name == *name).is_some_and(|g| g.default);
            (*on != default).then_some((*name, *on))
        })
    }

    /// The gates that change CloneSet planning, for kruise-core's planner.
    pub fn to_cloneset_gates(&self) -> kruise_core::cloneset::FeatureGates {
        let mut g = kruise_core::cloneset::FeatureGates::default();
        g.clone_set_short_hash = self.enabled("CloneSetShortHash");
        g.clone_set_partition_rollback = self.enabled("CloneSetPartitionRollback");
        g.preparing_update_as_update = self.enabled("PreparingUpdateAsUpdate");
        g.in_place_workload_vertical_scaling = self.enabled("InPlaceWorkloadVerticalScaling");
        g.recreate_pod_when_change_vct = self.enabled("RecreatePodWhenChangeVCTInCloneSetGate");
        g.in_place_update_env_from_metadata = self.enabled("InPlaceUpdateEnvFromMetadata");
        g.pre_download_image_for_in_place_update = self.enabled("PreDownloadImageForInPlaceUpdate");
        g.pod_webhook = self.enabled("PodWebhook");
        g
    }

    /// The gates that change Advanced StatefulSet planning, for kruise-core's planner.
    pub fn to_statefulset_gates(&self) -> kruise_core::statefulset::FeatureGates {
        let mut g = kruise_core::statefulset::FeatureGates::default();
        g.stateful_set_start_ordinal = self.enabled("StatefulSetStartOrdinal");
        g.stateful_set_auto_delete_pvc = self.enabled("StatefulSetAutoDeletePVC");
        g.stateful_set_auto_resize_pvc = self.enabled("StatefulSetAutoResizePVCGate");
        g.pod_index_label = self.enabled("PodIndexLabel");
        g.preparing_update_as_update = self.enabled("PreparingUpdateAsUpdate");
        g.in_place_workload_vertical_scaling = self.enabled("InPlaceWorkloadVerticalScaling");
        g.in_place_update_env_from_metadata = self.enabled("InPlaceUpdateEnvFromMetadata");
        g.pre_download_image_for_in_place_update = self.enabled("PreDownloadImageForInPlaceUpdate");
        g.pod_webhook = self.enabled("PodWebhook");
        g
    }
}

/// `Name=bool` items sorted by name: the gates differing from their defaults, or with the
/// alternate form (`{:#}`) every gate. The output parses back to equal gates.
impl fmt::Display for FeatureGates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<String> = if f.alternate() {
            self.values.iter().map(|(n, v)| format!("{n}={v}")).collect()
        } else {
            self.non_default().map(|(n, v)| format!("{n}={v}")).collect()
        };
        f.write_str(&items.join(","))
    }
}

fn spec_of(name: &str) -> Result<&'static GateSpec, FeatureGateError> {
    GATES.iter().find(|g| g.name == name).ok_or_else(|| FeatureGateError::Unknown {
        gate: name.to_string(),
        suggestions: close_names(name),
    })
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Known gates whose names are close to `name` (case-insensitive edit distance, or one
/// containing the other), closest first, at most three.
fn close_names(name: &str) -> Vec<&'static str> {
    let wanted = name.to_ascii_lowercase();
    if wanted.is_empty() {
        return Vec::new();
    }
    let limit = (wanted.len() / 4).max(2);
    let mut scored: Vec<(usize, &'static str)> = GATES
        .iter()
        .filter_map(|g| {
            let known = g.name.to_ascii_lowercase();
            let d = edit_distance(&wanted, &known);
            let contained =
                wanted.len() >= 4 && (known.contains(&wanted) || wanted.contains(&known));
            (d <= limit || contained).then_some((d, g.name))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = Vec::with_capacity(b.len() + 1);
        cur.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != *cb);
            cur.push(substitute.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> FeatureGates {
        match FeatureGates::parse(s) {
            Ok(g) => g,
            Err(e) => panic!("parse {s:?}: {e}"),
        }
    }

    /// Every gate, named on and named off: the manager takes it and the gate reads so, or
    /// refuses it at start with an error that names it and says why. Only the gates listed
    /// as not built are refused; the rest must be read by a test of their own (see
    /// `docs/manager.md`, "Feature gates").
    #[test]
    fn every_gate_is_taken_as_named_or_refused_by_name() {
        let dependents = ["PodWebhook", "KruiseDaemon", "ResourcesDeletionProtection"];
        for (gate, _) in FeatureGates::known().filter(|(n, _)| *n != ALL_ALPHA && *n != ALL_BETA) {
            for on in [true, false] {
                // The gates other gates depend on, on, so that no dependency overrides `gate`.
                let mut flag: Vec<String> =
                    dependents.iter().map(|d| format!("{d}=true")).collect();
                flag.retain(|item| !item.starts_with(&format!("{gate}=")));
                flag.push(format!("{gate}={on}"));
                let flag = flag.join(",");
                match (FeatureGates::parse(&flag), FeatureGates::support(gate)) {
                    (Ok(g), Support::Built | Support::AlwaysOn(_)) => {
                        assert_eq!(g.enabled(gate), on, "{flag}");
                    }
                    (Ok(g), Support::NotBuilt(_)) => {
                        assert!(!on && !g.enabled(gate), "{flag} was taken");
                    }
                    (Err(err), Support::NotBuilt(why)) => {
                        assert!(on, "{flag}: {err}");
                        let text = err.to_string();
                        assert!(text.contains(gate) && text.contains(why), "{text}");
                    }
                    (Err(err), _) => panic!("{flag}: {err}"),
                }
            }
        }
        let not_built: Vec<&str> = FeatureGates::known()
            .map(|(n, _)| n)
            .filter(|n| matches!(FeatureGates::support(n), Support::NotBuilt(_)))
            .collect();
        assert_eq!(not_built, ["CloneSetEventHandlerOptimization"]);
        // Named by AllAlpha rather than by name, a not-built gate is off with a warning.
        let g = parse("AllAlpha=true");
        assert!(!g.enabled("CloneSetEventHandlerOptimization"));
        assert!(g.enabled("CloneSetShortHash"));
    }

    #[test]
    fn defaults_are_upstreams() {
        let g = FeatureGates::default();
        for on in [
            "PodWebhook",
            "KruiseDaemon",
            "DaemonWatchingPod",
            "WorkloadSpread",
            "PodUnavailableBudgetDeleteGate",
            "InPlaceUpdateEnvFromMetadata",
            "StatefulSetAutoDeletePVC",
            "PodProbeMarkerGate",
            "PodIndexLabel",
        ] {
            assert!(g.enabled(on), "{on} should default on upstream");
        }
        for off in ["CloneSetShortHash", "ResourcesDeletionProtection", "ImagePullJobGate"] {
            assert!(!g.enabled(off), "{off} should default off");
        }
        let on_by_default: Vec<_> =
            FeatureGates::known().filter(|(_, d)| *d).map(|(n, _)| n).collect();
        assert_eq!(on_by_default.len(), 10);
        assert!(g.enabled("AdvancedDeployment"), "on as upstream's manager manifest sets it");
        assert!(!g.enabled("RolloutHistory") && !g.enabled("AppendPodSelector"));
        // 36 upstream gates, Kruise Rollout's 3, plus AllAlpha and AllBeta.
        assert_eq!(FeatureGates::known().count(), 41);
        assert_eq!(FeatureGates::spec("ResourceDistributionGate").map(|s| s.stage), Some(Beta));
        assert_eq!(FeatureGates::spec("EnhancedLivenessProbe").map(|s| s.stage), Some(Alpha));
        assert_eq!(FeatureGates::spec("EnhancedLivenessProbeGate"), None);
        assert_eq!(g.to_string(), "");
        // Upstream's defaults are a fixed point of SetDefaultFeatureGates.
        assert_eq!(parse(""), g);
        assert_eq!(parse(" , ,"), g);
    }

    #[test]
    fn parses_lists_with_whitespace_and_go_bools() {
        let g =
            parse(" CloneSetShortHash = true ,PodWebhook=F,, InPlaceWorkloadVerticalScaling=1 ");
        assert!(g.enabled("CloneSetShortHash"));
        assert!(!g.enabled("PodWebhook"));
        assert!(g.enabled("InPlaceWorkloadVerticalScaling"));
        // The last of repeated names wins.
        assert!(
            !parse("CloneSetShortHash=true,CloneSetShortHash=false").enabled("CloneSetShortHash")
        );
        assert!(!g.enabled("NoSuchGate"));
    }

    #[test]
    fn unknown_gate_names_it_and_suggests() {
        let err = FeatureGates::parse("CloneSetShortHsh=true").err();
        let Some(FeatureGateError::Unknown { gate, suggestions }) = err.clone() else {
            panic!("expected Unknown, got {err:?}");
        };
        assert_eq!(gate, "CloneSetShortHsh");
        assert_eq!(suggestions.first(), Some(&"CloneSetShortHash"));
        let msg = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("CloneSetShortHsh") && msg.contains("did you mean CloneSetShortHash"));

        let err = FeatureGates::parse("EnhancedLivenessProbeGate=true").err();
        assert!(matches!(err, Some(FeatureGateError::Unknown { ref suggestions, .. })
            if suggestions.contains(&"EnhancedLivenessProbe")));
        // Case matters, as upstream.
        let err = FeatureGates::parse("podwebhook=false").err();
        assert!(matches!(err, Some(FeatureGateError::Unknown { ref suggestions, .. })
            if suggestions == &vec!["PodWebhook"]));
        let err = FeatureGates::parse("Zzz=true").err();
        assert_eq!(
            err,
            Some(FeatureGateError::Unknown { gate: "Zzz".into(), suggestions: Vec::new() })
        );
    }

    #[test]
    fn bad_values_name_gate_and_value() {
        assert_eq!(
            FeatureGates::parse("PodWebhook=yes").err(),
            Some(FeatureGateError::InvalidValue { gate: "PodWebhook".into(), value: "yes".into() })
        );
        let msg = FeatureGates::parse("PodWebhook=yes").err().map(|e| e.to_string());
        assert!(msg.is_some_and(|m| m.contains("PodWebhook=yes")));
        assert_eq!(
            FeatureGates::parse("PodWebhook").err(),
            Some(FeatureGateError::MissingValue { gate: "PodWebhook".into() })
        );
        assert!(matches!(
            FeatureGates::parse("PodWebhook=").err(),
            Some(FeatureGateError::InvalidValue { .. })
        ));
    }

    #[test]
    fn set_and_known() {
        let mut g = FeatureGates::default();
        assert_eq!(g.set("CloneSetPartitionRollback", true), Ok(()));
        assert!(g.enabled("CloneSetPartitionRollback"));
        assert!(matches!(g.set("Nope", true), Err(FeatureGateError::Unknown { .. })));
        assert_ne!(g, FeatureGates::default());
        assert_eq!(g.set("CloneSetPartitionRollback", false), Ok(()));
        assert_eq!(g, FeatureGates::default());
    }

    #[test]
    fn all_alpha_and_all_beta_respect_explicit_gates() {
        let g = parse("AllAlpha=true,CloneSetShortHash=false");
        assert!(!g.enabled("CloneSetShortHash"));
        assert!(g.enabled("CloneSetPartitionRollback"));
        assert!(g.enabled("TemplateNoDefaults"));
        // Beta gates untouched.
        assert!(!g.enabled("ResourcesDeletionProtection"));
        assert!(g.enabled("PodWebhook"));
        // The order within the flag does not matter.
        assert_eq!(parse("CloneSetShortHash=false,AllAlpha=true"), g);

        let g = parse("AllBeta=false,KruiseDaemon=true");
        assert!(!g.enabled("PodWebhook"));
        assert!(g.enabled("KruiseDaemon"));
        assert!(!g.enabled("PodIndexLabel"));
        assert!(!g.enabled("CloneSetShortHash"));
    }

    #[test]
    fn dependencies_follow_set_default_feature_gates() {
        let g = parse("PodWebhook=false,WorkloadSpread=true");
        assert!(!g.enabled("WorkloadSpread"));
        assert!(!g.enabled("PodUnavailableBudgetDeleteGate"));
        assert!(g.enabled("KruiseDaemon"));

        let g = parse("KruiseDaemon=false,PreDownloadImageForInPlaceUpdate=true");
        assert!(!g.enabled("InPlaceUpdateEnvFromMetadata"));
        assert!(!g.enabled("PreDownloadImageForInPlaceUpdate"));
        assert!(!g.enabled("ImagePullJobGate"));
        assert!(!g.enabled("PodProbeMarkerGate"));
        assert!(!g.to_cloneset_gates().in_place_update_env_from_metadata);

        let g = parse("PreDownloadImageForDaemonSetUpdate=true");
        assert!(g.enabled("ImagePullJobGate"));

        let g = parse("DeletionProtectionForCRDCascadingGate=true");
        assert!(!g.enabled("DeletionProtectionForCRDCascadingGate"));
        let g = parse("DeletionProtectionForCRDCascadingGate=true,ResourcesDeletionProtection=1");
        assert!(g.enabled("DeletionProtectionForCRDCascadingGate"));
    }

    #[test]
    fn display_round_trips() {
        let g = parse("PodWebhook=true,CloneSetShortHash=true,StatefulSetAutoDeletePVC=false");
        assert_eq!(g.to_string(), "CloneSetShortHash=true,StatefulSetAutoDeletePVC=false");
        assert_eq!(parse(&g.to_string()), g);
        let all = format!("{g:#}");
        assert_eq!(all.split(',').count(), 41);
        assert!(all.contains("PodWebhook=true"));
        assert_eq!(parse(&all), g);
        let g = parse("AllAlpha=true");
        assert_eq!(parse(&g.to_string()), g);
    }

    #[test]
    fn cloneset_gates_mapping() {
        let d = FeatureGates::default().to_cloneset_gates();
        assert_eq!(d, kruise_core::cloneset::FeatureGates::default());
        let g = parse(
            "CloneSetShortHash=true,CloneSetPartitionRollback=true,PreparingUpdateAsUpdate=true,\
             InPlaceWorkloadVerticalScaling=true,RecreatePodWhenChangeVCTInCloneSetGate=true,\
             InPlaceUpdateEnvFromMetadata=false",
        )
        .to_cloneset_gates();
        assert!(g.clone_set_short_hash);
        assert!(g.clone_set_partition_rollback);
        assert!(g.preparing_update_as_update);
        assert!(g.in_place_workload_vertical_scaling);
        assert!(g.recreate_pod_when_change_vct);
        assert!(!g.in_place_update_env_from_metadata);
    }

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
