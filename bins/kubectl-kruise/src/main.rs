//! `kubectl-kruise`: the kubectl plugin (`kubectl kruise ...`). It wires the command line to
//! the API server; what a rollout's status is and what each command writes come from
//! [`kruise_core::rollout`].

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use clap::{Args, Parser, Subcommand};
use k8s_openapi::api::apps::v1::ControllerRevision;
use kruise_core::forecast::Cluster;
use kruise_core::rollout::{self, RolloutStatus};
use kruise_kube::workload::next_and_ahead;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::Value;

/// kubectl-kruise controls the OpenKruise workloads (CloneSet, Advanced StatefulSet, Advanced
/// DaemonSet) and the native ones.
#[derive(Parser, Debug)]
#[command(name = "kubectl-kruise", bin_name = "kubectl kruise", version)]
struct Cli {
    /// Path to the kubeconfig file to use.
    #[arg(long, global = true, env = "KUBECONFIG", hide_env_values = true)]
    kubeconfig: Option<String>,
    /// The name of the kubeconfig context to use.
    #[arg(long, global = true)]
    context: Option<String>,
    /// The namespace scope for this request.
    #[arg(short = 'n', long, global = true)]
    namespace: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Manage the rollout of a resource.
    #[command(subcommand)]
    Rollout(RolloutCommand),
    /// Scale a CloneSet down by deleting exactly the named pods.
    Scaledown(ScaleDown),
    /// Run the manager's admission webhooks (defaulting, then validation) on the objects of
    /// FILES, offline: what a create would be answered, without a cluster.
    Validate(ValidateArgs),
    /// Show what the manager will do next to a CloneSet, Advanced StatefulSet or Advanced
    /// DaemonSet, and the whole rollout ahead wave by wave: its own planner run on the live
    /// objects (with -f, on the spec of a file, as if it were applied).
    Plan(PlanArgs),
    /// Set specific features on objects.
    #[command(subcommand)]
    Set(SetCommand),
    /// Create a resource from an AdvancedCronJob, or a ContainerRecreateRequest.
    #[command(subcommand)]
    Create(CreateCommand),
    /// Execute a command in a container; `-S SIDECAR` picks the container that serves a
    /// hot-upgrade sidecar now (runs `kubectl exec`).
    Exec(ExecArgs),
    /// Display resources: `get all` lists the CloneSets, Advanced StatefulSets, Advanced
    /// DaemonSets and UnitedDeployments (runs `kubectl get` with their printer columns).
    Get(GetArgs),
    /// Show a Kruise Rollout in detail: its steps, the current one, its traffic routing, its
    /// canary and its BatchRelease.
    Describe(DescribeArgs),
    /// Set a new size for a CloneSet, Advanced StatefulSet, UnitedDeployment or native
    /// workload, through its scale subresource.
    Scale(ScaleArgs),
    /// Expose a workload as a new Service selecting its pods.
    Expose(ExposeArgs),
    /// Migrate from a Kubernetes Deployment to a CloneSet: `--create` makes the CloneSet,
    /// then a run without it moves the replicas, the CloneSet growing by at most --max-surge
    /// before the Deployment gives up as many, once the CloneSet's pods are available.
    Migrate(MigrateArgs),
}

/// kubectl's flags of a command that writes: `--dry-run` and `-o`.
#[derive(Args, Debug, Clone)]
struct WriteFlags {
    /// Must be "none", "server", or "client".
    #[arg(long, default_value = "none", num_args = 0..=1, default_missing_value = "client")]
    dry_run: String,
    /// Print the object written: `yaml`, `json` or `name`.
    #[arg(short = 'o', long)]
    output: Option<String>,
}

#[derive(Args, Debug)]
struct MigrateArgs {
    /// The kind to migrate to: CloneSet.
    kind: Vec<String>,
    /// The kind to migrate from: Deployment.
    #[arg(long, default_value = "")]
    from: String,
    /// The name of the Deployment.
    #[arg(long, default_value = "")]
    src_name: String,
    /// The name of the CloneSet.
    #[arg(long, default_value = "")]
    dst_name: String,
    /// Create the CloneSet from the Deployment, with replicas=0 (and move none).
    #[arg(long)]
    create: bool,
    /// With --create, copy the Deployment's replicas instead of 0.
    #[arg(long)]
    copy: bool,
    /// How many replicas to migrate; -1 for all of the Deployment's.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    replicas: i32,
    /// At most this many CloneSet replicas ahead of the Deployment's scale-in.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    max_surge: i32,
    /// Give up after this long; -1 for never.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    timeout_seconds: i64,
}

#[derive(Args, Debug)]
struct ExposeArgs {
    /// TYPE/NAME (or TYPE NAME).
    #[arg(required = true, num_args = 1..=2)]
    resource: Vec<String>,
    /// The Service's name (default: the workload's).
    #[arg(long)]
    name: Option<String>,
    /// The port the Service serves on (default: the first container port).
    #[arg(long)]
    port: Option<i32>,
    /// The container port (or its name) traffic goes to (default: the port).
    #[arg(long)]
    target_port: Option<String>,
    /// The port's protocol (default TCP).
    #[arg(long)]
    protocol: Option<String>,
    /// The Service type (default ClusterIP).
    #[arg(long = "type")]
    type_: Option<String>,
    /// The Service's selector, KEY=VALUE,... (default: the workload's matchLabels).
    #[arg(short = 'l', long)]
    selector: Option<String>,
    #[command(flatten)]
    write: WriteFlags,
}

#[derive(Args, Debug)]
struct DescribeArgs {
    /// `rollout NAME` or `rollout/NAME`.
    #[arg(required = true, num_args = 1..=2)]
    resource: Vec<String>,
}

#[derive(Args, Debug)]
struct GetArgs {
    /// `all`.
    what: String,
    /// In every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// kubectl's output format (`wide`, `yaml`, `json`, `name`, ...).
    #[arg(short = 'o', long)]
    output: Option<String>,
}

#[derive(Subcommand, Debug)]
enum SetCommand {
    /// Update the image of a pod template: TYPE/NAME CONTAINER=IMAGE... (`*` for every
    /// container).
    Image(SetImageArgs),
    /// Update environment variables of a pod template: TYPE/NAME KEY=VALUE... KEY-...
    Env(SetEnvArgs),
    /// Update the service account of a pod template: TYPE/NAME SERVICE_ACCOUNT.
    #[command(name = "serviceaccount", alias = "sa")]
    ServiceAccount(SetServiceAccountArgs),
    /// Update the resource requests and limits of a pod template's containers: TYPE/NAME
    /// [-c CONTAINER] --limits=cpu=200m,memory=512Mi --requests=...
    Resources(SetResourcesArgs),
    /// Set a Service's selector: service/NAME KEY=VALUE,... (the whole selector is replaced).
    Selector(SetSelectorArgs),
    /// Add users, groups or service accounts to a RoleBinding or ClusterRoleBinding.
    Subject(SetSubjectArgs),
}

#[derive(Args, Debug)]
struct SetServiceAccountArgs {
    /// TYPE/NAME, then the service account.
    #[arg(required = true, num_args = 2..=2)]
    args: Vec<String>,
    #[command(flatten)]
    write: WriteFlags,
}

#[derive(Args, Debug)]
struct SetSelectorArgs {
    /// service/NAME, then KEY=VALUE,...
    #[arg(required = true, num_args = 2..=2)]
    args: Vec<String>,
    #[command(flatten)]
    write: WriteFlags,
}

#[derive(Args, Debug)]
struct SetSubjectArgs {
    /// rolebinding/NAME or clusterrolebinding/NAME (or TYPE NAME).
    #[arg(required = true, num_args = 1..=2)]
    resource: Vec<String>,
    /// Users to add.
    #[arg(long = "user")]
    users: Vec<String>,
    /// Groups to add.
    #[arg(long = "group")]
    groups: Vec<String>,
    /// Service accounts to add, each NAMESPACE:NAME.
    #[arg(long = "serviceaccount")]
    service_accounts: Vec<String>,
    #[command(flatten)]
    write: WriteFlags,
}

#[derive(Args, Debug)]
struct SetResourcesArgs {
    /// TYPE/NAME.
    target: String,
    /// Only this container (`*`: all, the default).
    #[arg(short = 'c', long)]
    containers: Option<String>,
    /// The limits to set, NAME=QUANTITY,...
    #[arg(long)]
    limits: Option<String>,
    /// The requests to set, NAME=QUANTITY,...
    #[arg(long)]
    requests: Option<String>,
    #[command(flatten)]
    write: WriteFlags,
}

#[derive(Args, Debug)]
struct ScaleArgs {
    /// TYPE/NAME (or TYPE NAME).
    #[arg(required = true, num_args = 1..=2)]
    resource: Vec<String>,
    /// The new number of replicas.
    #[arg(long)]
    replicas: i32,
    #[command(flatten)]
    write: WriteFlags,
}

#[derive(Args, Debug)]
struct SetEnvArgs {
    /// TYPE/NAME, then KEY=VALUE (set) and KEY- (remove).
    #[arg(required = true, num_args = 1..)]
    args: Vec<String>,
    /// Only this container.
    #[arg(short = 'c', long)]
    containers: Option<String>,
    /// Take a variable from each key of `secret/NAME` or `configmap/NAME`, by reference.
    #[arg(long)]
    from: Option<String>,
    /// With --from, put this in front of each variable's name.
    #[arg(long, default_value = "")]
    prefix: String,
    /// With --from, only these keys.
    #[arg(long, value_delimiter = ',')]
    keys: Vec<String>,
    #[command(flatten)]
    write: WriteFlags,
}

#[derive(Args, Debug)]
struct SetImageArgs {
    /// TYPE/NAME, then CONTAINER=IMAGE pairs.
    #[arg(required = true, num_args = 2..)]
    args: Vec<String>,
    #[command(flatten)]
    write: WriteFlags,
}

#[derive(Subcommand, Debug)]
enum CreateCommand {
    /// Create a Job from an AdvancedCronJob's jobTemplate: NAME --from advancedcronjob/NAME.
    Job(CreateFromArgs),
    /// Create a BroadcastJob from an AdvancedCronJob's broadcastJobTemplate.
    #[command(name = "broadcastjob", alias = "broadcastJob")]
    BroadcastJob(CreateFromArgs),
    /// Create a ContainerRecreateRequest recreating some (default all) containers of a pod.
    #[command(name = "containerrecreaterequest", aliases = ["ContainerRecreateRequest", "crr"])]
    ContainerRecreateRequest(CreateCrrArgs),
}

#[derive(Args, Debug)]
struct CreateFromArgs {
    /// The new object's name.
    name: String,
    /// The source: advancedcronjob/NAME.
    #[arg(long)]
    from: String,
}

#[derive(Args, Debug)]
struct CreateCrrArgs {
    /// The request's name.
    name: String,
    /// The pod whose containers are recreated.
    #[arg(short = 'p', long)]
    pod: String,
    /// The containers, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    containers: Vec<String>,
}

#[derive(Args, Debug)]
struct ExecArgs {
    /// The pod.
    pod: String,
    /// The hot-upgrade sidecar whose working container to run in.
    #[arg(short = 'S', long = "sidecar")]
    sidecar: Option<String>,
    /// The container (without -S).
    #[arg(short = 'c', long)]
    container: Option<String>,
    /// Pass stdin to the container.
    #[arg(short = 'i', long)]
    stdin: bool,
    /// Stdin is a TTY.
    #[arg(short = 't', long)]
    tty: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[derive(Args, Debug)]
struct PlanArgs {
    #[command(flatten)]
    target: Target,
    /// A file whose object replaces the workload's spec (defaulted as the webhook would), to
    /// see what applying it would do.
    #[arg(short = 'f', long = "filename")]
    file: Option<String>,
    /// Print the whole plan: `yaml` or `json`.
    #[arg(short = 'o', long)]
    output: Option<String>,
    /// Feature gates, as the manager takes them (`Name=true,Other=false`).
    #[arg(long, default_value = "")]
    feature_gates: String,
}

#[derive(Args, Debug)]
struct ValidateArgs {
    /// Files of objects (YAML or JSON, several documents, `List`s); `-` reads standard input.
    #[arg(short = 'f', long = "filename", required = true)]
    files: Vec<String>,
    /// Print the objects as the mutating webhooks left them: `yaml` or `json`.
    #[arg(short = 'o', long)]
    output: Option<String>,
    /// Feature gates, as the manager takes them (`Name=true,Other=false`).
    #[arg(long, default_value = "")]
    feature_gates: String,
}

#[derive(Subcommand, Debug)]
enum RolloutCommand {
    /// Show the status of the rollout: done when the pods up to the partition are updated and
    /// available.
    Status(StatusArgs),
    /// View rollout history.
    History(HistoryArgs),
    /// Undo a previous rollout.
    Undo(UndoArgs),
    /// Mark the provided resource as paused.
    Pause(WriteTarget),
    /// Resume a paused resource.
    Resume(WriteTarget),
    /// Restart a resource: its pods are replaced (or updated in place) as for a new template.
    Restart(WriteTarget),
    /// Approve the paused step of a Rollout, so that the release goes on.
    Approve(Target),
}

#[derive(Args, Debug)]
struct Target {
    /// TYPE/NAME, or TYPE NAME.
    #[arg(required = true, num_args = 1..=2)]
    resource: Vec<String>,
}

#[derive(Args, Debug)]
struct WriteTarget {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    write: WriteFlags,
}

#[derive(Args, Debug)]
struct StatusArgs {
    #[command(flatten)]
    target: Target,
    /// Watch the status of the rollout until it's done.
    #[arg(short = 'w', long, default_value_t = true, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    watch: bool,
    /// The length of time to wait before ending watch, zero means never (e.g. 1s, 2m).
    #[arg(long, default_value = "0s")]
    timeout: String,
}

#[derive(Args, Debug)]
struct HistoryArgs {
    #[command(flatten)]
    target: Target,
    /// See the details, including the pod template, of the revision specified.
    #[arg(long, default_value_t = 0)]
    revision: i64,
}

#[derive(Args, Debug)]
struct UndoArgs {
    #[command(flatten)]
    target: Target,
    /// The revision to rollback to. Default to 0 (last revision).
    #[arg(long, default_value_t = 0)]
    to_revision: i64,
    #[command(flatten)]
    write: WriteFlags,
}

#[derive(Args, Debug)]
struct ScaleDown {
    /// cloneset/NAME, or cloneset NAME.
    #[arg(required = true, num_args = 1..=2)]
    resource: Vec<String>,
    /// The pods to delete, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pods: Vec<String>,
    #[command(flatten)]
    write: WriteFlags,
}

/// A workload kind the plugin knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Kind {
    kind: &'static str,
    group: &'static str,
    version: &'static str,
    plural: &'static str,
}

impl Kind {
    const CLONESET: Kind =
        Kind { kind: "CloneSet", group: "apps.kruise.io", version: "v1beta1", plural: "clonesets" };
    /// A CloneSet at v1alpha1 (what `migrate --create` writes, as upstream's does).
    const CLONESET_V1ALPHA1: Kind = Kind {
        kind: "CloneSet",
        group: "apps.kruise.io",
        version: "v1alpha1",
        plural: "clonesets",
    };
    const ADVANCED_STATEFULSET: Kind = Kind {
        kind: "StatefulSet",
        group: "apps.kruise.io",
        version: "v1beta1",
        plural: "statefulsets",
    };
    const ADVANCED_DAEMONSET: Kind = Kind {
        kind: "DaemonSet",
        group: "apps.kruise.io",
        version: "v1beta1",
        plural: "daemonsets",
    };
    const UNITED_DEPLOYMENT: Kind = Kind {
        kind: "UnitedDeployment",
        group: "apps.kruise.io",
        version: "v1alpha1",
        plural: "uniteddeployments",
    };
    const DEPLOYMENT: Kind =
        Kind { kind: "Deployment", group: "apps", version: "v1", plural: "deployments" };
    const STATEFULSET: Kind =
        Kind { kind: "StatefulSet", group: "apps", version: "v1", plural: "statefulsets" };
    const DAEMONSET: Kind =
        Kind { kind: "DaemonSet", group: "apps", version: "v1", plural: "daemonsets" };
    const ADVANCED_CRON_JOB: Kind = Kind {
        kind: "AdvancedCronJob",
        group: "apps.kruise.io",
        version: "v1beta1",
        plural: "advancedcronjobs",
    };
    const BROADCAST_JOB: Kind = Kind {
        kind: "BroadcastJob",
        group: "apps.kruise.io",
        version: "v1beta1",
        plural: "broadcastjobs",
    };
    const JOB: Kind = Kind { kind: "Job", group: "batch", version: "v1", plural: "jobs" };
    const ROLLOUT: Kind = Kind {
        kind: "Rollout",
        group: "rollouts.kruise.io",
        version: "v1beta1",
        plural: "rollouts",
    };
    const SERVICE: Kind = Kind { kind: "Service", group: "", version: "v1", plural: "services" };
    const ROLE_BINDING: Kind = Kind {
        kind: "RoleBinding",
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "rolebindings",
    };
    /// Cluster-scoped: [`Session::api`] reads it outside any namespace.
    const CLUSTER_ROLE_BINDING: Kind = Kind {
        kind: "ClusterRoleBinding",
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterrolebindings",
    };
    const CONTAINER_RECREATE_REQUEST: Kind = Kind {
        kind: "ContainerRecreateRequest",
        group: "apps.kruise.io",
        version: "v1beta1",
        plural: "containerrecreaterequests",
    };

    /// The kind a TYPE names, as kubectl's short names and `plural.group` forms do.
    fn parse(text: &str) -> Option<Kind> {
        let lower = text.to_ascii_lowercase();
        Some(match lower.as_str() {
            "cloneset"
            | "clonesets"
            | "clone"
            | "cloneset.apps.kruise.io"
            | "clonesets.apps.kruise.io" => Self::CLONESET,
            "asts"
            | "advancedstatefulset"
            | "statefulset.apps.kruise.io"
            | "statefulsets.apps.kruise.io" => Self::ADVANCED_STATEFULSET,
            "ads"
            | "advanceddaemonset"
            | "daemonset.apps.kruise.io"
            | "daemonsets.apps.kruise.io" => Self::ADVANCED_DAEMONSET,
            "ud"
            | "uniteddeployment"
            | "uniteddeployments"
            | "uniteddeployment.apps.kruise.io"
            | "uniteddeployments.apps.kruise.io" => Self::UNITED_DEPLOYMENT,
            "deployment" | "deployments" | "deploy" | "deployment.apps" | "deployments.apps" => {
                Self::DEPLOYMENT
            }
            "statefulset" | "statefulsets" | "sts" | "statefulset.apps" | "statefulsets.apps" => {
                Self::STATEFULSET
            }
            "daemonset" | "daemonsets" | "ds" | "daemonset.apps" | "daemonsets.apps" => {
                Self::DAEMONSET
            }
            "rollout"
            | "rollouts"
            | "rollout.rollouts.kruise.io"
            | "rollouts.rollouts.kruise.io" => Self::ROLLOUT,
            "service" | "services" | "svc" => Self::SERVICE,
            "rolebinding" | "rolebindings" | "rolebinding.rbac.authorization.k8s.io" => {
                Self::ROLE_BINDING
            }
            "clusterrolebinding"
            | "clusterrolebindings"
            | "clusterrolebinding.rbac.authorization.k8s.io" => Self::CLUSTER_ROLE_BINDING,
            _ => return None,
        })
    }

    fn resource(self) -> ApiResource {
        let api_version = if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        };
        ApiResource {
            group: self.group.to_owned(),
            version: self.version.to_owned(),
            api_version,
            kind: self.kind.to_owned(),
            plural: self.plural.to_owned(),
        }
    }

    /// `cloneset.apps.kruise.io/web` (`service/web`), as kubectl names an object.
    fn shown(self, name: &str) -> String {
        match self.group {
            "" => format!("{}/{name}", self.kind.to_ascii_lowercase()),
            group => format!("{}.{group}/{name}", self.kind.to_ascii_lowercase()),
        }
    }

    /// `clonesets.apps.kruise.io "web"` (`services "web"`), as kubectl's errors name an
    /// object.
    fn quoted(self, name: &str) -> String {
        match self.group {
            "" => format!("{} {name:?}", self.plural),
            group => format!("{}.{group} {name:?}", self.plural),
        }
    }
}

/// TYPE/NAME or TYPE NAME.
fn parse_target(words: &[String]) -> anyhow::Result<(Kind, String)> {
    let (kind, name) = match words {
        [one] => one.split_once('/').ok_or_else(|| {
            anyhow!("you must provide one or more resources by argument or filename")
        })?,
        [kind, name] => (kind.as_str(), name.as_str()),
        _ => bail!("you must provide one or more resources by argument or filename"),
    };
    let parsed = Kind::parse(kind)
        .ok_or_else(|| anyhow!("the server doesn't have a resource type {kind:?}"))?;
    if name.is_empty() {
        bail!("resource name may not be empty");
    }
    Ok((parsed, name.to_owned()))
}

fn parse_timeout(text: &str) -> anyhow::Result<Option<Duration>> {
    let span: jiff::SignedDuration = text
        .parse::<jiff::Span>()
        .ok()
        .and_then(|s| jiff::SignedDuration::try_from(s).ok())
        .or_else(|| {
            text.strip_suffix('s')
                .and_then(|n| n.parse::<i64>().ok())
                .map(jiff::SignedDuration::from_secs)
        })
        .or_else(|| (text == "0").then_some(jiff::SignedDuration::ZERO))
        .ok_or_else(|| anyhow!("invalid argument {text:?} for \"--timeout\" flag"))?;
    let duration =
        Duration::try_from(span).map_err(|_| anyhow!("--timeout must not be negative"))?;
    Ok((!duration.is_zero()).then_some(duration))
}

struct Session {
    client: kube::Client,
    namespace: String,
}

impl Session {
    async fn connect(cli: &Cli) -> anyhow::Result<Self> {
        let options =
            kube::config::KubeConfigOptions { context: cli.context.clone(), ..Default::default() };
        let config = match &cli.kubeconfig {
            Some(path) if !path.is_empty() && !path.contains(':') => {
                let file = kube::config::Kubeconfig::read_from(path)
                    .with_context(|| format!("reading the kubeconfig {path}"))?;
                kube::Config::from_custom_kubeconfig(file, &options).await?
            }
            _ => kube::Config::from_kubeconfig(&options).await?,
        };
        let namespace = cli.namespace.clone().unwrap_or_else(|| config.default_namespace.clone());
        let client = kube::Client::try_from(config)?;
        Ok(Self { client, namespace })
    }

    fn api(&self, kind: Kind) -> Api<DynamicObject> {
        if kind == Kind::CLUSTER_ROLE_BINDING {
            return Api::all_with(self.client.clone(), &kind.resource());
        }
        Api::namespaced_with(self.client.clone(), &self.namespace, &kind.resource())
    }

    async fn get(&self, kind: Kind, name: &str) -> anyhow::Result<DynamicObject> {
        match self.api(kind).get(name).await {
            Ok(object) => Ok(object),
            Err(kube::Error::Api(e)) if e.code == 404 => {
                bail!("{} not found", kind.quoted(name))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A pod, as JSON.
    async fn pod(&self, name: &str) -> anyhow::Result<Value> {
        let pods: Api<k8s_openapi::api::core::v1::Pod> =
            Api::namespaced(self.client.clone(), &self.namespace);
        match pods.get(name).await {
            Ok(pod) => Ok(serde_json::to_value(pod)?),
            Err(kube::Error::Api(e)) if e.code == 404 => bail!("pods {name:?} not found"),
            Err(e) => Err(e.into()),
        }
    }

    /// The workload's ControllerRevisions (those it controls).
    async fn revisions(&self, object: &DynamicObject) -> anyhow::Result<Vec<ControllerRevision>> {
        let uid = object.metadata.uid.clone().unwrap_or_default();
        let api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), &self.namespace);
        let list = api.list(&ListParams::default()).await?;
        Ok(list
            .items
            .into_iter()
            .filter(|r| {
                r.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.uid == uid && o.controller == Some(true))
            })
            .collect())
    }
}

fn typed<T: serde::de::DeserializeOwned>(object: &DynamicObject) -> anyhow::Result<T> {
    let value = serde_json::to_value(object)?;
    serde_json::from_value(value).context("reading the object")
}

/// The rollout status of `object`, by kind.
fn status_of(kind: Kind, object: &DynamicObject) -> anyhow::Result<RolloutStatus> {
    Ok(match kind {
        Kind::CLONESET => rollout::cloneset_status(&typed(object)?)?,
        Kind::ADVANCED_STATEFULSET => rollout::advanced_statefulset_status(&typed(object)?)?,
        Kind::ADVANCED_DAEMONSET => rollout::advanced_daemonset_status(&typed(object)?)?,
        Kind::DEPLOYMENT => rollout::deployment_status(&typed(object)?),
        Kind::STATEFULSET => rollout::statefulset_status(&typed(object)?)?,
        Kind::DAEMONSET => rollout::kube_daemonset_status(&typed(object)?)?,
        other => bail!("no status viewer has been implemented for {}", other.kind),
    })
}

fn patch_params(dry_run: &str) -> anyhow::Result<(PatchParams, &'static str)> {
    match dry_run {
        "none" | "false" => Ok((PatchParams::default(), "")),
        "server" => {
            Ok((PatchParams { dry_run: true, ..PatchParams::default() }, " (server dry run)"))
        }
        "client" | "true" => Ok((PatchParams::default(), " (dry run)")),
        other => {
            bail!("Invalid dry-run value ({other}). Must be \"none\", \"server\", or \"client\".")
        }
    }
}

async fn rollout_status(session: &Session, args: &StatusArgs) -> anyhow::Result<()> {
    let (kind, name) = parse_target(&args.target.resource)?;
    let timeout = parse_timeout(&args.timeout)?;
    let started = Instant::now();
    let mut last = String::new();
    loop {
        let object = session.get(kind, &name).await?;
        let status = status_of(kind, &object)?;
        if status.message != last {
            println!("{}", status.message);
            last = status.message.clone();
        }
        if status.done || !args.watch {
            return Ok(());
        }
        if timeout.is_some_and(|t| started.elapsed() >= t) {
            bail!("timed out waiting for the condition");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn rollout_history(session: &Session, args: &HistoryArgs) -> anyhow::Result<()> {
    let (kind, name) = parse_target(&args.target.resource)?;
    let object = session.get(kind, &name).await?;
    let revisions = session.revisions(&object).await?;
    let refs: Vec<&ControllerRevision> = revisions.iter().collect();
    if args.revision > 0 {
        let revision = refs
            .iter()
            .find(|r| r.revision == Some(args.revision))
            .ok_or_else(|| anyhow!("unable to find the specified revision"))?;
        let template =
            kruise_core::revision::template_from_revision(revision).map_err(|e| anyhow!("{e}"))?;
        println!("{} with revision #{}", kind.shown(&name), args.revision);
        println!("Pod Template:");
        let yaml = serde_yaml::to_string(&template)?;
        for line in yaml.lines() {
            println!("  {line}");
        }
        return Ok(());
    }
    println!("{}", kind.shown(&name));
    println!("REVISION  CHANGE-CAUSE");
    for (revision, cause) in rollout::history(&refs) {
        println!("{revision:<9} {cause}");
    }
    println!();
    Ok(())
}

async fn rollout_undo(session: &Session, args: &UndoArgs) -> anyhow::Result<()> {
    let (kind, name) = parse_target(&args.target.resource)?;
    if !matches!(kind, Kind::CLONESET | Kind::ADVANCED_STATEFULSET | Kind::ADVANCED_DAEMONSET) {
        bail!(
            "rollout undo of {} is kubectl's own: use `kubectl rollout undo {}`",
            kind.kind,
            kind.shown(&name)
        );
    }
    let (_, note) = patch_params(&args.write.dry_run)?;
    check_write_output(args.write.output.as_deref())?;
    let object = session.get(kind, &name).await?;
    let revisions = session.revisions(&object).await?;
    let refs: Vec<&ControllerRevision> = revisions.iter().collect();
    let version = object.metadata.resource_version.clone().unwrap_or_default();
    let (chosen, patch) =
        rollout::undo_patch(&refs, args.to_revision, &version).map_err(|e| anyhow!("{e}"))?;
    if same_template(&object.data["spec"]["template"], &patch[1]["value"]) {
        println!(
            "{} skipped rollback (current template already matches revision {chosen})",
            kind.shown(&name)
        );
        return Ok(());
    }
    let written =
        write_json_patch(session, kind, &name, serde_json::to_value(&object)?, patch, &args.write)
            .await?;
    print_written(
        &kind.shown(&name),
        &written,
        args.write.output.as_deref(),
        &format!("rolled back{note}"),
    )
}

/// Templates equal but for the fields the server defaults and the revision may not carry.
fn same_template(current: &Value, revision: &Value) -> bool {
    fn strip(v: &Value) -> Value {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("creationTimestamp");
        }
        v
    }
    strip(current) == strip(revision)
}

async fn rollout_pause(session: &Session, args: &WriteTarget, paused: bool) -> anyhow::Result<()> {
    let (kind, name) = parse_target(&args.target.resource)?;
    let Some(patch) = rollout::pause_patch(kind.kind, paused) else {
        bail!("{} is not supported for pause and resume", kind.kind);
    };
    if kind == Kind::STATEFULSET || kind == Kind::DAEMONSET {
        bail!("{} is not supported for pause and resume", kind.shown(&name));
    }
    let object = session.get(kind, &name).await?;
    let now = rollout::is_paused(&serde_json::to_value(&object)?);
    if now == paused {
        bail!("{} is {}", kind.quoted(&name), if paused { "already paused" } else { "not paused" });
    }
    let done = if paused { "paused" } else { "resumed" };
    merge_and_print(session, kind, &name, serde_json::to_value(&object)?, &patch, &args.write, done)
        .await
}

/// Writes a merge patch as `--dry-run` says (`client`: nothing is sent) and prints
/// `SHOWN DONE (dry run)`, or the object as `-o` asks.
async fn merge_and_print(
    session: &Session,
    kind: Kind,
    name: &str,
    object: Value,
    patch: &Value,
    write: &WriteFlags,
    done: &str,
) -> anyhow::Result<()> {
    let (params, suffix) = patch_params(&write.dry_run)?;
    check_write_output(write.output.as_deref())?;
    let written = if matches!(write.dry_run.as_str(), "client" | "true") {
        let mut local = object;
        json_patch::merge(&mut local, patch);
        local
    } else {
        serde_json::to_value(session.api(kind).patch(name, &params, &Patch::Merge(patch)).await?)?
    };
    print_written(&kind.shown(name), &written, write.output.as_deref(), &format!("{done}{suffix}"))
}

async fn describe(session: &Session, args: &DescribeArgs) -> anyhow::Result<()> {
    let (kind, name) = parse_target(&args.resource)?;
    if kind != Kind::ROLLOUT {
        bail!("describe supports only rollout, not {}", kind.kind);
    }
    let object = session.get(kind, &name).await?;
    let rollout: kruise_api::rollouts::v1beta1::Rollout = typed(&object)?;
    let release_kind = Kind {
        kind: "BatchRelease",
        group: "rollouts.kruise.io",
        version: "v1beta1",
        plural: "batchreleases",
    };
    let release = match session.api(release_kind).get_opt(&name).await? {
        Some(object) => Some(typed::<kruise_api::rollouts::v1beta1::BatchRelease>(&object)?),
        None => None,
    };
    print!("{}", kruise_core::rollouts::describe::describe(&rollout, release.as_ref()));
    Ok(())
}

async fn rollout_approve(session: &Session, target: &Target) -> anyhow::Result<()> {
    let (kind, name) = parse_target(&target.resource)?;
    if kind != Kind::ROLLOUT {
        bail!("{} is not supported for approve", kind.shown(&name));
    }
    let object = session.get(kind, &name).await?;
    let rollout: kruise_api::rollouts::v1beta1::Rollout = typed(&object)?;
    let patch = kruise_core::rollouts::approve_patch(&rollout)
        .map_err(|e| anyhow!("{} cannot be approved: {e}", kind.quoted(&name)))?;
    session.api(kind).patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    println!("{} approved", kind.shown(&name));
    Ok(())
}

async fn rollout_restart(session: &Session, args: &WriteTarget) -> anyhow::Result<()> {
    let (kind, name) = parse_target(&args.target.resource)?;
    let object = serde_json::to_value(session.get(kind, &name).await?)?;
    let patch = rollout::restart_patch(jiff::Timestamp::now());
    merge_and_print(session, kind, &name, object, &patch, &args.write, "restarted").await
}

async fn scale_down(session: &Session, args: &ScaleDown) -> anyhow::Result<()> {
    let (kind, name) = parse_target(&args.resource)?;
    if kind != Kind::CLONESET {
        bail!("scaledown supports only CloneSet, not {}", kind.kind);
    }
    let (_, note) = patch_params(&args.write.dry_run)?;
    check_write_output(args.write.output.as_deref())?;
    let object = session.get(kind, &name).await?;
    let set: kruise_api::apps::v1beta1::CloneSet = typed(&object)?;
    let uid = object.metadata.uid.clone().unwrap_or_default();
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(session.client.clone(), &session.namespace);
    let owned: Vec<String> = pods
        .list_metadata(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|p| {
            p.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == uid && o.controller == Some(true))
        })
        .filter_map(|p| p.metadata.name)
        .collect();
    let patch = rollout::scale_down_patch(&set, &args.pods, &owned).map_err(|e| anyhow!("{e}"))?;
    let written =
        write_json_patch(session, kind, &name, serde_json::to_value(&object)?, patch, &args.write)
            .await?;
    let done = format!("scaled down: {}{note}", args.pods.join(", "));
    print_written(&kind.shown(&name), &written, args.write.output.as_deref(), &done)
}

/// `kubectl` with the plugin's kubeconfig and context.
fn kubectl(cli: &Cli) -> std::process::Command {
    let mut command = std::process::Command::new("kubectl");
    if let Some(path) = &cli.kubeconfig {
        command.args(["--kubeconfig", path]);
    }
    if let Some(context) = &cli.context {
        command.args(["--context", context]);
    }
    command
}

/// `-o`: `yaml` or `json` when given.
fn check_output(output: Option<&str>) -> anyhow::Result<()> {
    match output {
        None | Some("yaml" | "json") => Ok(()),
        Some(format) => bail!(
            "unable to match a printer suitable for the output format {format:?}, allowed formats are: json,yaml"
        ),
    }
}

/// `--feature-gates`, as the manager reads it.
fn feature_gates(flag: &str) -> anyhow::Result<kruise_kube::features::FeatureGates> {
    let mut gates = kruise_kube::features::FeatureGates::parse(flag)
        .map_err(|e| anyhow!("--feature-gates: {e}"))?;
    gates.apply_dependencies();
    Ok(gates)
}

/// The objects of one file ([`rollout::documents`]).
fn objects_of(text: &str) -> anyhow::Result<Vec<Value>> {
    Ok(rollout::documents(text)?)
}

/// `cloneset.apps.kruise.io/web`, from an object's JSON.
fn shown_object(object: &Value) -> String {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let group = api_version.split_once('/').map_or("", |(g, _)| g);
    let kind = object["kind"].as_str().unwrap_or_default().to_ascii_lowercase();
    let name = object["metadata"]["name"]
        .as_str()
        .or_else(|| object["metadata"]["generateName"].as_str())
        .unwrap_or_default();
    if group.is_empty() { format!("{kind}/{name}") } else { format!("{kind}.{group}/{name}") }
}

async fn validate(args: &ValidateArgs) -> anyhow::Result<()> {
    use kruise_kube::admission::offline::{OfflineAdmission, OfflineError};
    check_output(args.output.as_deref())?;
    let gates = feature_gates(&args.feature_gates)?;
    let admission = OfflineAdmission::new(&gates)?;
    let mut refused = 0usize;
    let mut defaulted = Vec::new();
    for file in &args.files {
        let text = if file == "-" {
            std::io::read_to_string(std::io::stdin())?
        } else {
            std::fs::read_to_string(file)
                .with_context(|| format!("the path {file:?} does not exist"))?
        };
        let objects = objects_of(&text).with_context(|| format!("error parsing {file}"))?;
        for object in objects {
            let shown = shown_object(&object);
            match admission.review(object).await {
                Ok(reviewed) => match reviewed.denied {
                    Some(denial) => {
                        refused += 1;
                        eprintln!("error: {file}: {shown}: {denial}");
                    }
                    None if args.output.is_some() => defaulted.push(reviewed.object),
                    None => println!("{shown} valid"),
                },
                Err(OfflineError::NotKruise { .. }) if args.output.is_some() => {}
                Err(OfflineError::NotKruise { .. }) => {
                    println!("{shown} skipped (not one of Kruise's kinds)");
                }
                Err(e) => {
                    refused += 1;
                    eprintln!("error: {file}: {shown}: {e}");
                }
            }
        }
    }
    match args.output.as_deref() {
        Some("json") => {
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": defaulted});
            println!("{}", serde_json::to_string_pretty(&list)?);
        }
        Some(_) => {
            for object in &defaulted {
                print!("---\n{}", serde_yaml::to_string(object)?);
            }
        }
        None => {}
    }
    if refused > 0 {
        bail!("{refused} object(s) refused");
    }
    Ok(())
}

/// The objects a workload controls, by kind.
async fn controlled<K>(session: &Session, uid: &str) -> anyhow::Result<Vec<K>>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(session.client.clone(), &session.namespace);
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|o| {
            o.meta()
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.uid == uid && r.controller == Some(true))
        })
        .collect())
}

/// The workload's spec replaced by the one in `file`, defaulted by the manager's webhooks.
async fn with_spec_from(
    object: &DynamicObject,
    file: &str,
    gates: &kruise_kube::features::FeatureGates,
) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("the path {file:?} does not exist"))?;
    let mut docs = objects_of(&text)?;
    if docs.len() != 1 {
        bail!("{file}: expected one object, found {}", docs.len());
    }
    let mut new = docs.remove(0);
    let live = serde_json::to_value(object)?;
    for key in ["apiVersion", "kind"] {
        if new[key] != live[key]
            && !(key == "apiVersion"
                && new[key].as_str().is_some_and(|v| v.starts_with("apps.kruise.io/")))
        {
            bail!(
                "{file}: {} {} is not {} {}",
                new["apiVersion"],
                new["kind"],
                live["apiVersion"],
                live["kind"]
            );
        }
    }
    new["metadata"]["name"] = live["metadata"]["name"].clone();
    new["metadata"]["namespace"] = live["metadata"]["namespace"].clone();
    let admission = kruise_kube::admission::offline::OfflineAdmission::new(gates)?;
    let reviewed = admission.review(new).await?;
    if let Some(denial) = reviewed.denied {
        bail!("{file}: {denial}");
    }
    let mut merged = live;
    // The file may be at v1alpha1: it is read at the live object's version.
    let defaulted = reviewed.object;
    let hub = if defaulted["apiVersion"] == merged["apiVersion"] {
        defaulted
    } else {
        let target = merged["apiVersion"].as_str().unwrap_or_default().to_owned();
        let object = kruise_api::KruiseObject::from_value(defaulted).map_err(|e| anyhow!("{e}"))?;
        serde_json::to_value(object.convert_to(&target).map_err(|e| anyhow!("{e}"))?)?
    };
    merged["spec"] = hub["spec"].clone();
    let generation = merged["metadata"]["generation"].as_i64().unwrap_or(1);
    merged["metadata"]["generation"] = serde_json::json!(generation + 1);
    Ok(merged)
}

async fn plan(session: &Session, args: &PlanArgs) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
    let (kind, name) = parse_target(&args.target.resource)?;
    if !matches!(kind, Kind::CLONESET | Kind::ADVANCED_STATEFULSET | Kind::ADVANCED_DAEMONSET) {
        bail!(
            "plan supports CloneSet, Advanced StatefulSet and Advanced DaemonSet, not {}",
            kind.shown(&name)
        );
    }
    check_output(args.output.as_deref())?;
    let gates = feature_gates(&args.feature_gates)?;
    let object = session.get(kind, &name).await?;
    let uid = object.metadata.uid.clone().unwrap_or_default();
    let workload = match &args.file {
        Some(file) => with_spec_from(&object, file, &gates).await?,
        None => serde_json::to_value(&object)?,
    };
    let status = workload["status"].clone();
    let mut cluster = Cluster::new(workload, jiff::Timestamp::now());
    cluster.pods = controlled::<Pod>(session, &uid).await?;
    cluster.pvcs = controlled::<PersistentVolumeClaim>(session, &uid).await?;
    cluster.revisions = controlled::<ControllerRevision>(session, &uid).await?;
    let nodes: Api<Node> = Api::all(session.client.clone());
    let nodes = nodes.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default();
    cluster.nodes = nodes.iter().filter_map(|n| n.metadata.name.clone()).collect();
    let around = kruise_kube::workload::Surroundings::of(&nodes);
    let mut settings = kruise_kube::controller::ControllerSettings::default();
    settings.gates = gates;
    let (next, ahead) = match kind {
        Kind::CLONESET => {
            let (next, ahead) =
                next_and_ahead::<kruise_api::apps::v1beta1::CloneSet>(cluster, &around, &settings);
            (serde_json::to_value(next)?, ahead)
        }
        Kind::ADVANCED_STATEFULSET => {
            let (next, ahead) = next_and_ahead::<kruise_api::apps::v1beta1::StatefulSet>(
                cluster, &around, &settings,
            );
            (serde_json::to_value(next)?, ahead)
        }
        _ => {
            let (next, ahead) =
                next_and_ahead::<kruise_api::apps::v1beta1::DaemonSet>(cluster, &around, &settings);
            (serde_json::to_value(next)?, ahead)
        }
    };
    let whole = serde_json::json!({"next": next, "ahead": ahead});
    match args.output.as_deref() {
        Some("json") => println!("{}", serde_json::to_string_pretty(&whole)?),
        Some(_) => print!("{}", serde_yaml::to_string(&whole)?),
        None => {
            print_plan(&kind.shown(&name), args.file.is_some(), &next, &status);
            let strategy = &ahead.end.workload["spec"]["updateStrategy"];
            for line in rollout::describe_forecast(&ahead, strategy) {
                println!("{line}");
            }
        }
    }
    Ok(())
}

fn print_plan(shown: &str, from_file: bool, plan: &Value, status: &Value) {
    let when = if from_file { "if the file were applied" } else { "next" };
    println!("{shown}: what the manager does {when}");
    let lines = rollout::describe_actions(plan);
    if lines.is_empty() {
        println!("  nothing to write");
    }
    for line in lines {
        println!("  {line}");
    }
    if let Some(blocked) = plan.get("blocked") {
        println!("blocked: {}", serde_json::to_string(blocked).unwrap_or_default());
    }
    if let Some(new) = plan.get("status").and_then(Value::as_object) {
        let mut changes = Vec::new();
        for (key, value) in new {
            let old = status.get(key).unwrap_or(&Value::Null);
            if old != value && !value.is_object() && !value.is_array() {
                changes.push(format!("{key}: {old} -> {value}"));
            }
        }
        if !changes.is_empty() {
            println!("status:");
            for change in changes {
                println!("  {change}");
            }
        }
    }
    for event in plan["events"].as_array().into_iter().flatten() {
        println!(
            "event: {} {} {}",
            event["type"].as_str().unwrap_or_default(),
            event["reason"].as_str().unwrap_or_default(),
            event["message"].as_str().unwrap_or_default()
        );
    }
    if let Some(after) = plan.get("requeueAfter") {
        println!(
            "then again after {}",
            after.as_str().map_or_else(|| after.to_string(), str::to_owned)
        );
    }
}

async fn set_image(session: &Session, args: &SetImageArgs) -> anyhow::Result<()> {
    let (target, assignments) = args.args.split_at(1);
    patch_template(session, target, "image", &args.write, |object| {
        rollout::set_image_patch(object, assignments).map_err(|e| anyhow!("{e}"))
    })
    .await
}

async fn set_env(session: &Session, args: &SetEnvArgs) -> anyhow::Result<()> {
    let (target, assignments) = args.args.split_at(1);
    let container = args.containers.as_deref();
    let Some(from) = &args.from else {
        if assignments.is_empty() {
            bail!("at least one environment variable must be provided");
        }
        return patch_template(session, target, "env", &args.write, |object| {
            rollout::set_env_patch(object, container, assignments).map_err(|e| anyhow!("{e}"))
        })
        .await;
    };
    let (kind, name) = from.split_once('/').unwrap_or(("", from));
    let plural = match kind.to_ascii_lowercase().as_str() {
        "secret" | "secrets" => "secrets",
        "configmap" | "configmaps" | "cm" => "configmaps",
        _ => bail!("{}", rollout::set::SetError::FromKind(kind.to_owned())),
    };
    let source = read_core(session, plural, name).await?;
    // `--from` and KEY=VALUE together: the assignments come after the references.
    patch_template(session, target, "env", &args.write, |object| {
        let from =
            rollout::set::env_from_patch(object, container, &source, &args.prefix, &args.keys)
                .map_err(|e| anyhow!("{e}"))?;
        if assignments.is_empty() {
            return Ok(from);
        }
        let mut updated = object.clone();
        if let Some(patch) = &from {
            let patch: json_patch::Patch = serde_json::from_value(patch.clone())?;
            json_patch::patch(&mut updated, &patch)?;
        }
        let more =
            rollout::set_env_patch(&updated, container, assignments).map_err(|e| anyhow!("{e}"))?;
        Ok(match (from, more) {
            (Some(Value::Array(mut a)), Some(Value::Array(b))) => {
                a.extend(b.into_iter().skip(1));
                Some(Value::Array(a))
            }
            (from, more) => more.or(from),
        })
    })
    .await
}

/// A core/v1 object (`secrets`, `configmaps`), as JSON with its kind.
async fn read_core(session: &Session, plural: &str, name: &str) -> anyhow::Result<Value> {
    let kind = if plural == "secrets" { "Secret" } else { "ConfigMap" };
    let resource = ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    let api: Api<DynamicObject> =
        Api::namespaced_with(session.client.clone(), &session.namespace, &resource);
    match api.get(name).await {
        Ok(object) => {
            let mut value = serde_json::to_value(object)?;
            value["kind"] = Value::from(kind);
            Ok(value)
        }
        Err(kube::Error::Api(e)) if e.code == 404 => bail!("{plural} {name:?} not found"),
        Err(e) => Err(e.into()),
    }
}

/// Applies a JSON patch of a workload's template, built from the live object by `build`;
/// prints kubectl's `updated` line (`what`: `image`, `env`, ...), or that nothing changed.
async fn patch_template(
    session: &Session,
    target: &[String],
    what: &str,
    write: &WriteFlags,
    build: impl FnOnce(&Value) -> anyhow::Result<Option<Value>>,
) -> anyhow::Result<()> {
    let (kind, _) = parse_target(target)?;
    if kind == Kind::UNITED_DEPLOYMENT {
        bail!("set {what} does not support UnitedDeployment: set its subsets' template instead");
    }
    patch_object(session, target, what, write, build).await
}

/// Applies a JSON patch of an object, built from the live one by `build`, as `--dry-run`
/// says (`client`: nothing is sent); prints kubectl's `updated` line, `unchanged`, or the
/// object as `-o` asks.
async fn patch_object(
    session: &Session,
    target: &[String],
    what: &str,
    write: &WriteFlags,
    build: impl FnOnce(&Value) -> anyhow::Result<Option<Value>>,
) -> anyhow::Result<()> {
    let (kind, name) = parse_target(target)?;
    let (_, suffix) = patch_params(&write.dry_run)?;
    check_write_output(write.output.as_deref())?;
    let object = serde_json::to_value(session.get(kind, &name).await?)?;
    let (written, message) = match build(&object)? {
        Some(patch) => {
            let written = write_json_patch(session, kind, &name, object, patch, write).await?;
            (written, format!("{what} updated{suffix}"))
        }
        None => (object, format!("{what} unchanged")),
    };
    print_written(&kind.shown(&name), &written, write.output.as_deref(), &message)
}

/// Writes the JSON patch `patch` of `object` as `--dry-run` says (`client`: applied here,
/// nothing sent); the object as written, or as it would be.
async fn write_json_patch(
    session: &Session,
    kind: Kind,
    name: &str,
    object: Value,
    patch: Value,
    write: &WriteFlags,
) -> anyhow::Result<Value> {
    let (params, _) = patch_params(&write.dry_run)?;
    let patch: json_patch::Patch = serde_json::from_value(patch)?;
    if matches!(write.dry_run.as_str(), "client" | "true") {
        let mut local = object;
        json_patch::patch(&mut local, &patch)?;
        return Ok(local);
    }
    Ok(serde_json::to_value(
        session.api(kind).patch(name, &params, &Patch::Json::<()>(patch)).await?,
    )?)
}

/// `-o` of a writing command: `yaml`, `json` or `name`.
fn check_write_output(output: Option<&str>) -> anyhow::Result<()> {
    match output {
        None | Some("yaml" | "json" | "name") => Ok(()),
        Some(other) => bail!(
            "unable to match a printer suitable for the output format {other:?}, allowed formats are: json,name,yaml"
        ),
    }
}

/// What a writing command prints: `SHOWN MESSAGE`, or the object as `-o` asks.
fn print_written(
    shown: &str,
    object: &Value,
    output: Option<&str>,
    message: &str,
) -> anyhow::Result<()> {
    match output {
        None => println!("{shown} {message}"),
        Some("name") => println!("{shown}"),
        Some("json") => println!("{}", serde_json::to_string_pretty(object)?),
        Some(_) => print!("{}", serde_yaml::to_string(object)?),
    }
    Ok(())
}

async fn expose(session: &Session, args: &ExposeArgs) -> anyhow::Result<()> {
    let (kind, name) = parse_target(&args.resource)?;
    let object = serde_json::to_value(session.get(kind, &name).await?)?;
    let options = rollout::ExposeOptions {
        selector: args.selector.clone(),
        name: args.name.clone(),
        port: args.port,
        target_port: args.target_port.clone(),
        protocol: args.protocol.clone(),
        type_: args.type_.clone(),
    };
    let (_, suffix) = patch_params(&args.write.dry_run)?;
    check_write_output(args.write.output.as_deref())?;
    let service: k8s_openapi::api::core::v1::Service =
        serde_json::from_value(rollout::expose_service(&object, &options)?)?;
    let created = match args.write.dry_run.as_str() {
        "client" | "true" => service,
        dry_run => {
            let params = kube::api::PostParams {
                dry_run: dry_run == "server",
                ..kube::api::PostParams::default()
            };
            Api::<k8s_openapi::api::core::v1::Service>::namespaced(
                session.client.clone(),
                &session.namespace,
            )
            .create(&params, &service)
            .await?
        }
    };
    let shown = format!("service/{}", created.metadata.name.clone().unwrap_or_default());
    print_written(
        &shown,
        &serde_json::to_value(&created)?,
        args.write.output.as_deref(),
        &format!("exposed{suffix}"),
    )
}

async fn scale(session: &Session, args: &ScaleArgs) -> anyhow::Result<()> {
    if args.replicas < 0 {
        bail!(
            "The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0"
        );
    }
    let (kind, name) = parse_target(&args.resource)?;
    let (params, suffix) = patch_params(&args.write.dry_run)?;
    check_write_output(args.write.output.as_deref())?;
    let patch = serde_json::json!({"spec": {"replicas": args.replicas}});
    if !matches!(args.write.dry_run.as_str(), "client" | "true") {
        session.api(kind).patch_subresource("scale", &name, &params, &Patch::Merge(&patch)).await?;
    }
    let mut object = serde_json::to_value(session.get(kind, &name).await?)?;
    object["spec"]["replicas"] = Value::from(args.replicas);
    print_written(
        &kind.shown(&name),
        &object,
        args.write.output.as_deref(),
        &format!("scaled{suffix}"),
    )
}

/// `migrate CloneSet --from Deployment`: checks the flags in upstream's order and words, then
/// creates the CloneSet (`--create`) or moves the replicas step by step
/// ([`rollout::migrate::migration_step`]), each write a merge patch guarded by the object's
/// resourceVersion (a conflict is read again, not counted).
async fn migrate(session: &Session, args: &MigrateArgs) -> anyhow::Result<()> {
    use rollout::migrate::{Migration, MigrationStep, Replicas, after, migration_step};
    match args.kind.as_slice() {
        [] => bail!("must specify workload type like CloneSet"),
        [_] => {}
        _ => bail!("more than one given args"),
    }
    if args.from.is_empty() {
        bail!("must specify --from");
    }
    if args.src_name.is_empty() {
        bail!("must specify --src-name");
    }
    if args.dst_name.is_empty() {
        bail!("must specify --dst-name");
    }
    if !matches!(args.kind[0].as_str(), "CloneSet" | "cloneset" | "clone") {
        bail!("currently only supported CloneSet as dst type");
    }
    if !matches!(args.from.as_str(), "Deployment" | "deployment") {
        bail!("currently only supported Deployment as src type");
    }
    let (src, dst) = (args.src_name.as_str(), args.dst_name.as_str());
    let deployment = serde_json::to_value(session.get(Kind::DEPLOYMENT, src).await?)?;
    if args.create {
        if session.api(Kind::CLONESET).get_opt(dst).await?.is_some() {
            bail!("cloneset {}/{dst} already exists", session.namespace);
        }
        let body = rollout::migrate::cloneset_from_deployment(&deployment, dst, args.copy);
        create_object(session, Kind::CLONESET_V1ALPHA1, body).await?;
        println!("Successfully created from Deployment/{src} to CloneSet/{dst}");
        return Ok(());
    }
    session.get(Kind::CLONESET, dst).await?;
    let failed = |e: rollout::migrate::MigrateError| anyhow!("failed to migrate: {e}");
    let replicas = (args.replicas >= 0).then_some(args.replicas);
    let mut migration = Migration::start(src, &Replicas::of(&deployment), replicas, args.max_surge)
        .map_err(failed)?;
    let deadline = (args.timeout_seconds > 0)
        .then(|| Instant::now() + Duration::from_secs(args.timeout_seconds.unsigned_abs()));
    let mut shown = (0, 0);
    loop {
        let deployment = serde_json::to_value(session.get(Kind::DEPLOYMENT, src).await?)?;
        let cloneset = serde_json::to_value(session.get(Kind::CLONESET, dst).await?)?;
        let step =
            migration_step(&migration, src, &Replicas::of(&deployment), &Replicas::of(&cloneset))
                .map_err(failed)?;
        let write = match &step {
            MigrationStep::Done => break,
            MigrationStep::Wait(_) => None,
            MigrationStep::ScaleCloneSet { replicas, .. } => {
                Some((Kind::CLONESET, dst, &cloneset, *replicas))
            }
            MigrationStep::ScaleDeployment { replicas, .. } => {
                Some((Kind::DEPLOYMENT, src, &deployment, *replicas))
            }
        };
        if let Some((kind, name, object, replicas)) = write {
            let patch = serde_json::json!({
                "metadata": {"resourceVersion": object["metadata"]["resourceVersion"]},
                "spec": {"replicas": replicas},
            });
            match session
                .api(kind)
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => migration = after(&migration, &step),
                // Read again: someone else wrote in between.
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => return Err(anyhow!("failed to migrate: {e}")),
            }
        }
        if (migration.scaled_in, migration.scaled_out) != shown {
            shown = (migration.scaled_in, migration.scaled_out);
            println!(
                "Migration progress: Deployment/{src} scale in {}, CloneSet/{dst} scale out {}",
                shown.0, shown.1
            );
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            bail!("failed to migrate: task timeout exceeded");
        }
        if write.is_none() {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    println!(
        "Successfully migrated {} replicas from Deployment/{src} to CloneSet/{dst}",
        migration.scaled_out
    );
    Ok(())
}

fn get_all(cli: &Cli, args: &GetArgs) -> anyhow::Result<()> {
    if args.what != "all" {
        bail!("kubectl kruise get supports `all`; use kubectl get for {:?}", args.what);
    }
    let mut command = kubectl(cli);
    command.args([
        "get",
        "clonesets.apps.kruise.io,statefulsets.apps.kruise.io,daemonsets.apps.kruise.io,uniteddeployments.apps.kruise.io",
    ]);
    if args.all_namespaces {
        command.arg("-A");
    } else if let Some(namespace) = &cli.namespace {
        command.args(["-n", namespace]);
    }
    if let Some(output) = &args.output {
        command.args(["-o", output]);
    }
    let status = command.status().context("running kubectl get")?;
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}

async fn create_from(
    session: &Session,
    args: &CreateFromArgs,
    broadcast: bool,
) -> anyhow::Result<()> {
    let Some((
        "advancedcronjob" | "advancedcronjobs" | "acj" | "advancedcronjob.apps.kruise.io",
        source,
    )) = args.from.split_once('/')
    else {
        bail!("from must be of the form advancedcronjob/NAME, not {:?}", args.from);
    };
    let cron_job = serde_json::to_value(session.get(Kind::ADVANCED_CRON_JOB, source).await?)?;
    let object = rollout::job_from_advanced_cron_job(&cron_job, &args.name, broadcast)
        .map_err(|e| anyhow!("{e}"))?;
    let kind = if broadcast { Kind::BROADCAST_JOB } else { Kind::JOB };
    create_object(session, kind, object).await?;
    println!("{} created", kind.shown(&args.name));
    Ok(())
}

async fn create_object(session: &Session, kind: Kind, object: Value) -> anyhow::Result<()> {
    let object: DynamicObject = serde_json::from_value(object)?;
    session.api(kind).create(&kube::api::PostParams::default(), &object).await?;
    Ok(())
}

async fn create_crr(session: &Session, args: &CreateCrrArgs) -> anyhow::Result<()> {
    let pod = session.pod(&args.pod).await?;
    let request = rollout::container_recreate_request(&pod, &args.name, &args.containers)
        .map_err(|e| anyhow!("{e}"))?;
    create_object(session, Kind::CONTAINER_RECREATE_REQUEST, request).await?;
    println!("{} created", Kind::CONTAINER_RECREATE_REQUEST.shown(&args.name));
    Ok(())
}

async fn exec(cli: &Cli, session: &Session, args: &ExecArgs) -> anyhow::Result<()> {
    let container = match (&args.sidecar, &args.container) {
        (Some(_), Some(_)) => bail!("-S and -c cannot be used together"),
        (Some(sidecar), None) => {
            let pod = session.pod(&args.pod).await?;
            Some(rollout::working_container(&pod, sidecar).map_err(|e| anyhow!("{e}"))?)
        }
        (None, container) => container.clone(),
    };
    let mut command = kubectl(cli);
    command.args(["exec", &args.pod, "-n", &session.namespace]);
    if let Some(container) = &container {
        command.args(["-c", container]);
    }
    if args.stdin {
        command.arg("-i");
    }
    if args.tty {
        command.arg("-t");
    }
    command.arg("--").args(&args.command);
    let status = command.status().context("running kubectl exec")?;
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Command::Validate(args) = &cli.command {
        return validate(args).await;
    }
    if let Command::Get(args) = &cli.command {
        return get_all(&cli, args);
    }
    let session = Session::connect(&cli).await?;
    match &cli.command {
        Command::Rollout(RolloutCommand::Status(args)) => rollout_status(&session, args).await,
        Command::Rollout(RolloutCommand::History(args)) => rollout_history(&session, args).await,
        Command::Rollout(RolloutCommand::Undo(args)) => rollout_undo(&session, args).await,
        Command::Rollout(RolloutCommand::Pause(target)) => {
            rollout_pause(&session, target, true).await
        }
        Command::Rollout(RolloutCommand::Resume(target)) => {
            rollout_pause(&session, target, false).await
        }
        Command::Rollout(RolloutCommand::Restart(target)) => {
            rollout_restart(&session, target).await
        }
        Command::Rollout(RolloutCommand::Approve(target)) => {
            rollout_approve(&session, target).await
        }
        Command::Scaledown(args) => scale_down(&session, args).await,
        Command::Validate(args) => validate(args).await,
        Command::Plan(args) => plan(&session, args).await,
        Command::Set(SetCommand::Image(args)) => set_image(&session, args).await,
        Command::Set(SetCommand::Env(args)) => set_env(&session, args).await,
        Command::Set(SetCommand::ServiceAccount(args)) => {
            patch_template(&session, &args.args[..1], "serviceaccount", &args.write, |object| {
                Ok(rollout::set_service_account_patch(object, &args.args[1]))
            })
            .await
        }
        Command::Set(SetCommand::Selector(args)) => {
            patch_object(&session, &args.args[..1], "selector", &args.write, |object| {
                rollout::set::selector_patch(object, &args.args[1]).map_err(|e| anyhow!("{e}"))
            })
            .await
        }
        Command::Set(SetCommand::Subject(args)) => {
            let subjects = rollout::set::Subjects {
                users: args.users.clone(),
                groups: args.groups.clone(),
                service_accounts: args.service_accounts.clone(),
            };
            patch_object(&session, &args.resource, "subjects", &args.write, |object| {
                rollout::set::subject_patch(object, &subjects).map_err(|e| anyhow!("{e}"))
            })
            .await
        }
        Command::Set(SetCommand::Resources(args)) => {
            patch_template(
                &session,
                std::slice::from_ref(&args.target),
                "resource requirements",
                &args.write,
                |object| {
                    rollout::set_resources_patch(
                        object,
                        args.containers.as_deref(),
                        args.limits.as_deref(),
                        args.requests.as_deref(),
                    )
                    .map_err(|e| anyhow!("{e}"))
                },
            )
            .await
        }
        Command::Scale(args) => scale(&session, args).await,
        Command::Migrate(args) => migrate(&session, args).await,
        Command::Expose(args) => expose(&session, args).await,
        Command::Get(args) => get_all(&cli, args),
        Command::Create(CreateCommand::Job(args)) => create_from(&session, args, false).await,
        Command::Create(CreateCommand::BroadcastJob(args)) => {
            create_from(&session, args, true).await
        }
        Command::Create(CreateCommand::ContainerRecreateRequest(args)) => {
            create_crr(&session, args).await
        }
        Command::Exec(args) => exec(&cli, &session, args).await,
        Command::Describe(args) => describe(&session, args).await,
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
