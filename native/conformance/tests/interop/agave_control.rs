//! The harness checked against itself: Agave's client to Agave's server. If this fails, the
//! harness (not Landfall) is wrong, so the Landfall tests beside it can be trusted when it passes.

use crate::harness::{AgaveClient, AgaveServer, assert_same_transactions, signed_transfers};
use solana_keypair::Keypair;
use solana_signer::Signer;
use solana_streamer::nonblocking::swqos::SwQosConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agave_client_reaches_agave_server_as_staked_identity() {
    let identity = Keypair::new_from_array([0x44; 32]);
    let key = identity.pubkey().to_bytes();
    let server = AgaveServer::spawn(&[(key, 1_000_000)], SwQosConfig::default());
    let client = AgaveClient::start(server.addr, &identity);
    let sent = signed_transfers(32);

    client.send(sent.clone()).await;
    let got = server.receive(sent.len()).await;
    client.shutdown().await;
    let rest = server.shutdown().await;

    assert!(rest.is_empty(), "packets beyond those sent: {rest:?}");
    assert!(
        got.iter()
            .all(|p| p.remote_pubkey == Some(key) && p.from_staked_node)
    );
    assert_same_transactions(&sent, got.into_iter().map(|p| p.bytes));
}
