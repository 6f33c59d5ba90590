//! apps.kruise.io/v1beta1: the stored API version of every apps.kruise.io kind that has one.

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
mod imagelistpulljob;
pub use imagelistpulljob::*;
mod imagepulljob;
pub use imagepulljob::*;
mod nodeimage;
pub use nodeimage::*;
mod persistentpodstate;
pub use persistentpodstate::*;
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
