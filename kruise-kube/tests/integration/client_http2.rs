//! The manager's API client against the embedded API server: requests in flight share one
//! HTTP/2 connection, as client-go's do against kube-apiserver.

use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

type TestResult = Result<(), Box<dyn std::error::Error>>;

async fn client(
    server: &kruise_sim::ServerHandle,
) -> Result<kube::Client, Box<dyn std::error::Error>> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(kruise_kube::client::client_from_config(config, 0.0, 0)?)
}

/// Once a first request has connected (a manager lists before it writes, and a slow start
/// begins with one creation), 200 creations in flight at once, each slowed by the server,
/// need no other connection; under HTTP/1.1 each would need its own. Those beyond the
/// server's stream limit (100) wait for a stream rather than fail.
#[tokio::test]
async fn creations_in_flight_share_one_connection() -> TestResult {
    let server = kruise_sim::Server::start(kruise_sim::Config::default()).await?;
    server.faults().slow_writes(Duration::from_millis(20));
    let client = client(&server).await?;
    let before = server.connections_accepted();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.list(&Default::default()).await?;
    let created = futures::stream::iter(0..200)
        .map(|i| {
            let api = api.clone();
            async move {
                let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                    "metadata": {"name": format!("cm-{i}")}, "data": {"i": i.to_string()}
                }))?;
                api.create(&PostParams::default(), &cm).await?;
                Ok::<_, Box<dyn std::error::Error>>(())
            }
        })
        .buffer_unordered(200)
        .collect::<Vec<_>>();
    let results = tokio::time::timeout(Duration::from_secs(30), created).await?;
    for result in results {
        result?;
    }
    let listed = api.list(&Default::default()).await?.items;
    let ours =
        listed.iter().filter(|cm| cm.metadata.name.as_ref().is_some_and(|n| n.starts_with("cm-")));
    assert_eq!(ours.count(), 200);
    assert_eq!(server.connections_accepted() - before, 1, "one connection for every request");
    server.shutdown();
    Ok(())
}
