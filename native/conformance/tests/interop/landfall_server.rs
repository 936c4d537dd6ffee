//! Agave's TPU client (`solana-tpu-client-next`) delivering to Landfall's server: what every
//! RPC node and forwarder does to a validator, done to the local cluster's stand-in.

use crate::harness::{AgaveClient, assert_same_transactions, bounded, signed_transfers};
use landfall_native::quic::{QuicServer, Received, ServerConfig};
use solana_keypair::Keypair;
use solana_signer::Signer;
use tokio::sync::mpsc::UnboundedReceiver;

/// Takes `count` transactions off a Landfall server's channel, each within the step bound.
pub async fn take(received: &mut UnboundedReceiver<Received>, count: usize) -> Vec<Received> {
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let next = bounded("Landfall server delivers", received.recv()).await;
        out.push(next.expect("the server is open while the test reads"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpu_client_next_delivers_to_landfall_server_with_its_identity() {
    let (server, mut received) =
        QuicServer::bind(&[0x55; 32], ServerConfig::default()).expect("Landfall server binds");
    let identity = Keypair::new_from_array([0x66; 32]);
    let client = AgaveClient::start(server.local_addr(), &identity);
    // More than the server's 20 streams per 100 ms: the throttle delays, it never loses.
    let sent = signed_transfers(64);

    client.send(sent.clone()).await;
    let got = take(&mut received, sent.len()).await;
    client.shutdown().await;
    bounded("Landfall server close", server.close()).await;

    // `close` ends the channel, so whatever is left is everything else it ever delivered.
    assert!(
        received.try_recv().is_err(),
        "a transaction beyond those sent"
    );
    let key = identity.pubkey().to_bytes();
    for tx in &got {
        assert_eq!(
            tx.peer,
            Some(key),
            "the identity in tpu-client-next's certificate"
        );
        assert!(tx.remote_addr.ip().is_loopback());
    }
    assert_eq!(server.stats().accepted_txs, sent.len() as u64);
    assert_same_transactions(&sent, got.into_iter().map(|tx| tx.bytes.to_vec()));
}
