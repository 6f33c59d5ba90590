//! apps.kruise.io/v1alpha1: the original API version, still served and converted to and from
//! the stored v1beta1 form. EphemeralJob, PodProbeMarker and NodePodProbe exist only here.

pub use crate::apps::common::{UpdateScatterStrategy, UpdateScatterTerm};

mod cloneset;
pub use cloneset::*;
mod advancedcronjob;
pub use advancedcronjob::*;
mod broadcastjob;
pub use broadcastjob::*;
mod containerrecreaterequest;
pub use containerrecreaterequest::*;
mod daemonset;
pub use daemonset::*;
mod ephemeraljob;
pub use ephemeraljob::*;
mod imagelistpulljob;
pub use imagelistpulljob::*;
mod imagepulljob;
pub use imagepulljob::*;
mod nodeimage;
pub use nodeimage::*;
mod nodepodprobe;
pub use nodepodprobe::*;
mod persistentpodstate;
pub use persistentpodstate::*;
mod podprobemarker;
pub use podprobemarker::*;
mod resourcedistribution;
pub use resourcedistribution::*;
mod sidecarset;
pub use sidecarset::*;
mod statefulset;
pub use statefulset::*;
mod uniteddeployment;
pub use uniteddeployment::*;
mod workloadspread;
pub use workloadspread::*;
