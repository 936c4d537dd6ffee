//! The stream rules both servers must enforce the same way, probed with Agave's own test client
//! configuration: a stream of exactly 1232 bytes (`PACKET_DATA_SIZE`) is one transaction, a
//! stream of 1233 bytes or of none closes the connection with code 5 `invalid_stream`, and
//! nothing of a rejected stream is delivered. Landfall's client refuses such transactions itself
//! rather than cost its connection to a leader.

use crate::harness::{AgaveServer, agave_test_connection, bounded};
use crate::landfall_server::take;
use landfall_native::quic::{
    ClientConfig, FailReason, MAX_TX_SIZE, QuicClient, QuicServer, ServerConfig, close,
};
use solana_keypair::Keypair;
use solana_packet::PACKET_DATA_SIZE;
use solana_streamer::nonblocking::swqos::SwQosConfig;
use std::net::SocketAddr;

/// What a server did with a bad stream: the application close code it closed the connection
/// with, or None if it kept the connection open.
async fn close_code_after(target: SocketAddr, stream: &[u8]) -> Option<u64> {
    let conn = agave_test_connection(target, &Keypair::new()).await;
    let mut send = bounded("open a stream", conn.open_uni())
        .await
        .expect("stream credit");
    // The server may close the connection while this is still being written; the close code,
    // not the write result, is the observation.
    let _ = bounded("write the stream", send.write_all(stream)).await;
    let _ = send.finish();
    match bounded("the server's verdict", conn.closed()).await {
        quinn::ConnectionError::ApplicationClosed(close) => Some(close.error_code.into_inner()),
        _ => None,
    }
}

/// The full-size stream is sent and delivered before the bad one, on its own connection, so
/// each server's verdict on one stream is observed alone.
async fn send_one(target: SocketAddr, stream: &[u8]) {
    let conn = agave_test_connection(target, &Keypair::new()).await;
    let mut send = bounded("open a stream", conn.open_uni())
        .await
        .expect("stream credit");
    bounded("write the stream", send.write_all(stream))
        .await
        .expect("stream written");
    send.finish().expect("stream finishes");
    bounded("stream acknowledged", send.stopped())
        .await
        .expect("stream not reset");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agave_and_landfall_servers_agree_on_stream_size_limits() {
    assert_eq!(MAX_TX_SIZE, PACKET_DATA_SIZE);
    let full = vec![0xa5; PACKET_DATA_SIZE];
    let oversize = vec![0x5a; PACKET_DATA_SIZE + 1];

    let agave = AgaveServer::spawn(&[], SwQosConfig::default());
    let (landfall, mut landfall_rx) =
        QuicServer::bind(&[0x77; 32], ServerConfig::default()).expect("Landfall server binds");

    send_one(agave.addr, &full).await;
    send_one(landfall.local_addr(), &full).await;
    let agave_full = agave.receive(1).await;
    let landfall_full = take(&mut landfall_rx, 1).await;

    let code = u64::from(close::INVALID_STREAM);
    assert_eq!(close_code_after(agave.addr, &oversize).await, Some(code));
    assert_eq!(
        close_code_after(landfall.local_addr(), &oversize).await,
        Some(code)
    );
    assert_eq!(close_code_after(agave.addr, &[]).await, Some(code));
    assert_eq!(
        close_code_after(landfall.local_addr(), &[]).await,
        Some(code)
    );

    let agave_rest = agave.shutdown().await;
    bounded("Landfall server close", landfall.close()).await;
    assert_eq!(agave_full.len(), 1);
    assert_eq!(agave_full[0].bytes, full);
    assert_eq!(landfall_full[0].bytes.as_ref(), &full[..]);
    assert!(
        agave_rest.is_empty(),
        "Agave delivered part of a rejected stream"
    );
    assert!(
        landfall_rx.try_recv().is_err(),
        "Landfall delivered part of a rejected stream"
    );
    let stats = landfall.stats();
    assert_eq!((stats.rejected_oversize, stats.rejected_empty), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landfall_client_refuses_what_agave_would_close_the_connection_for() {
    let agave = AgaveServer::spawn(&[], SwQosConfig::default());
    let client = QuicClient::new(&[0x84; 32], ClientConfig::default()).expect("client starts");

    let oversize = bytes::Bytes::from(vec![0x5a; PACKET_DATA_SIZE + 1]);
    let too_large = bounded("oversize send", client.send(agave.addr, oversize)).await;
    let empty = bounded("empty send", client.send(agave.addr, bytes::Bytes::new())).await;
    let stats = client.peer_stats();
    drop(client);
    let delivered = agave.shutdown().await;

    assert_eq!(too_large.reason, Some(FailReason::TooLarge));
    assert_eq!(empty.reason, Some(FailReason::Empty));
    assert!(
        stats.iter().all(|peer| peer.connects == 0),
        "refused before connecting: {stats:?}"
    );
    assert!(delivered.is_empty());
}
