//! Landfall's client (`landfall_native::quic::QuicClient`) delivering to Agave's own TPU server:
//! as an unstaked sender (how Landfall reaches mainnet leaders), as a staked identity (which
//! proves Agave reads the same identity key out of Landfall's certificate that Landfall
//! derives), and refused (Agave's `disallowed` close, which the client must answer with
//! back-off rather than new connections).

use crate::harness::{
    AgavePacket, AgaveServer, assert_same_transactions, bounded, signed_transfers,
};
use landfall_native::quic::{ClientConfig, FailReason, QuicClient, close, identity_pubkey};
use solana_keypair::Keypair;
use solana_signer::Signer;
use solana_streamer::nonblocking::swqos::SwQosConfig;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;

/// Sends every transaction concurrently (one queued send each, as the delivery engine does)
/// and asserts each was written.
async fn send_all(client: &Arc<QuicClient>, target: SocketAddr, transactions: &[Vec<u8>]) {
    let mut sends = JoinSet::new();
    for tx in transactions {
        let client = client.clone();
        let tx = bytes::Bytes::from(tx.clone());
        sends.spawn(async move { client.send(target, tx).await });
    }
    while let Some(outcome) = bounded("Landfall send", sends.join_next()).await {
        let outcome = outcome.expect("send task does not panic");
        assert!(outcome.ok(), "send failed: {outcome:?}");
    }
}

/// The transactions a server received, after checking how Agave classified their sender.
fn bytes_from(
    packets: Vec<AgavePacket>,
    remote_pubkey: Option<[u8; 32]>,
    staked: bool,
) -> Vec<Vec<u8>> {
    for packet in &packets {
        assert_eq!(
            packet.remote_pubkey, remote_pubkey,
            "sender identity as Agave saw it"
        );
        assert_eq!(
            packet.from_staked_node, staked,
            "Agave's staked / unstaked class"
        );
    }
    packets.into_iter().map(|p| p.bytes).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landfall_client_delivers_to_agave_tpu_as_unstaked_sender() {
    let server = AgaveServer::spawn(&[], SwQosConfig::default());
    let client = QuicClient::new(&[0x81; 32], ClientConfig::default()).expect("client starts");
    let sent = signed_transfers(64);

    send_all(&client, server.addr, &sent).await;
    let got = server.receive(sent.len()).await;
    let stats = client.peer_stats();
    drop(client);
    let rest = server.shutdown().await;

    assert!(rest.is_empty(), "packets beyond those sent: {rest:?}");
    // Agave keeps no identity for unstaked peers.
    assert_same_transactions(&sent, bytes_from(got, None, false));
    assert_eq!(stats.len(), 1);
    assert_eq!(
        (stats[0].sent, stats[0].failed, stats[0].connects),
        (64, 0, 1),
        "one reused connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agave_reads_landfall_identity_from_its_certificate() {
    let seed = [0x82; 32];
    // Agave's own key derivation for the stake table, Landfall's for the assertion below.
    let agave_view = Keypair::new_from_array(seed).pubkey().to_bytes();
    assert_eq!(identity_pubkey(&seed), agave_view);
    let server = AgaveServer::spawn(&[(agave_view, 1_000_000)], SwQosConfig::default());
    let client = QuicClient::new(&seed, ClientConfig::default()).expect("client starts");
    let sent = signed_transfers(16);

    send_all(&client, server.addr, &sent).await;
    let got = server.receive(sent.len()).await;
    drop(client);
    let rest = server.shutdown().await;

    assert!(rest.is_empty(), "packets beyond those sent: {rest:?}");
    assert_same_transactions(&sent, bytes_from(got, Some(agave_view), true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landfall_client_backs_off_when_agave_disallows_unstaked_senders() {
    // A validator that admits no unstaked connection closes each one with code 2 right after
    // the handshake, before granting any stream.
    let refusing = SwQosConfig {
        max_unstaked_connections: 0,
        ..SwQosConfig::default()
    };
    let server = AgaveServer::spawn(&[], refusing);
    // A back-off far longer than the test, so the second send meets it however slow CI is.
    let cfg = ClientConfig {
        backoff_base: Duration::from_secs(60),
        backoff_max: Duration::from_secs(60),
        ..ClientConfig::default()
    };
    let client = QuicClient::new(&[0x83; 32], cfg).expect("client starts");
    let tx = bytes::Bytes::from(signed_transfers(1).remove(0));
    let disallowed = Some(u64::from(close::DISALLOWED));

    let first = bounded("first send", client.send(server.addr, tx.clone())).await;
    let second = bounded("second send", client.send(server.addr, tx)).await;
    let stats = client.peer_stats();
    drop(client);
    let delivered = server.shutdown().await;

    assert!(
        matches!(
            first.reason,
            Some(FailReason::ConnectionLost | FailReason::ConnectFailed)
        ),
        "first send: {first:?}"
    );
    assert_eq!(
        first.code, disallowed,
        "Agave's close code reaches the caller"
    );
    assert_eq!(
        second.reason,
        Some(FailReason::Backoff),
        "second send: {second:?}"
    );
    assert_eq!(second.code, disallowed);
    assert_eq!(stats[0].connects, 1, "no new connection during back-off");
    assert_eq!(stats[0].last_close_code, disallowed);
    assert!(
        delivered.is_empty(),
        "a refused connection delivered {delivered:?}"
    );
}
