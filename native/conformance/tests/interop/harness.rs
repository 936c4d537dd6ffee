//! Agave's side of every conformance test: the validator's own TPU QUIC server
//! (`solana-streamer`), its own TPU client (`solana-tpu-client-next`), and real signed
//! transactions for them to carry. Nothing here re-implements the protocol: each piece is the
//! crates.io code a validator or an RPC node runs.

use std::collections::HashMap;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::num::NonZeroUsize;
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use solana_hash::Hash;
use solana_keypair::Keypair;
use solana_perf::packet::PacketBatch;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use solana_streamer::nonblocking::swqos::SwQosConfig;
use solana_streamer::nonblocking::testing_utilities::get_client_config;
use solana_streamer::quic::{QuicStreamerConfig, spawn_stake_weighted_qos_server};
use solana_streamer::streamer::StakedNodes;
use solana_system_interface::instruction::transfer;
use solana_tpu_client_next::leader_updater::LeaderUpdater;
use solana_tpu_client_next::{Client, ClientBuilder, TransactionSender};
use solana_transaction::Transaction;
use tokio_util::sync::CancellationToken;

/// Upper bound on every await in these tests. Loopback QUIC answers in milliseconds; the bound
/// only exists so that a hang fails the test instead of stalling CI.
pub const STEP: Duration = Duration::from_secs(20);

/// Awaits `fut`, failing the test with `what` if it has not finished within [`STEP`].
pub async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(STEP, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no result within {STEP:?}"))
}

/// `count` distinct, really signed legacy System transfers (lamports 1..=count, so every wire
/// image differs), serialized the way wallets and Agave put them on the wire (bincode).
pub fn signed_transfers(count: u64) -> Vec<Vec<u8>> {
    let payer = Keypair::new_from_array([0x11; 32]);
    let to = Pubkey::new_from_array([0x22; 32]);
    let blockhash = Hash::new_from_array([0x33; 32]);
    (1..=count)
        .map(|lamports| {
            let tx = Transaction::new_signed_with_payer(
                &[transfer(&payer.pubkey(), &to, lamports)],
                Some(&payer.pubkey()),
                &[&payer],
                blockhash,
            );
            bincode::serialize(&tx).expect("a transaction always serializes")
        })
        .collect()
}

/// Asserts that `received` holds exactly the transactions of `sent`, byte for byte, each once,
/// in any order (streams of one connection may be reassembled out of order).
pub fn assert_same_transactions(sent: &[Vec<u8>], received: impl IntoIterator<Item = Vec<u8>>) {
    let mut want = sent.to_vec();
    want.sort();
    let mut got: Vec<Vec<u8>> = received.into_iter().collect();
    got.sort();
    assert_eq!(
        got.len(),
        want.len(),
        "received {} of {} transactions",
        got.len(),
        want.len()
    );
    assert!(
        got == want,
        "received bytes differ from the transactions sent"
    );
}

/// One packet as Agave's TPU handed it to the validator's packet pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgavePacket {
    pub bytes: Vec<u8>,
    /// The ed25519 key Agave read from the sender's TLS certificate. Agave records it only for
    /// peers its stake table knows (`SwQos::build_connection_context`); `None` for unstaked ones.
    pub remote_pubkey: Option<[u8; 32]>,
    /// Whether Agave's stake-weighted QoS classed the connection as staked.
    pub from_staked_node: bool,
}

/// Agave's production TPU QUIC server (`solana_streamer::quic::spawn_stake_weighted_qos_server`,
/// the function a validator's TPU calls), on 127.0.0.1 with an OS-chosen port, its own runtime
/// thread and a random identity key.
pub struct AgaveServer {
    pub addr: SocketAddr,
    packets: Receiver<PacketBatch>,
    cancel: CancellationToken,
    thread: JoinHandle<()>,
}

impl AgaveServer {
    /// `stakes` maps identity keys to stake (empty: every peer is unstaked); `qos` is the
    /// stake-weighted QoS configuration, `SwQosConfig::default()` being a mainnet validator's.
    pub fn spawn(stakes: &[([u8; 32], u64)], qos: SwQosConfig) -> Self {
        let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
        let addr = socket
            .local_addr()
            .expect("local address of a bound socket");
        let identity = Keypair::new();
        let stakes: HashMap<Pubkey, u64> = stakes
            .iter()
            .map(|(key, stake)| (Pubkey::new_from_array(*key), *stake))
            .collect();
        let staked_nodes = Arc::new(RwLock::new(StakedNodes::new(
            Arc::new(stakes),
            HashMap::new(),
        )));
        // Bounded like a validator's channel; these tests send far fewer packets than this.
        let (sender, packets) = crossbeam_channel::bounded(4096);
        let cancel = CancellationToken::new();
        let server = spawn_stake_weighted_qos_server(
            "agaveTpuTest",
            "agave_tpu_conformance",
            [socket.into()],
            &identity,
            sender,
            staked_nodes,
            QuicStreamerConfig {
                num_threads: NonZeroUsize::new(2).expect("2 is non-zero"),
                ..QuicStreamerConfig::default()
            },
            qos,
            cancel.clone(),
        )
        .expect("Agave's QUIC server starts");
        Self {
            addr,
            packets,
            cancel,
            thread: server.thread,
        }
    }

    /// Waits until `count` packets have arrived (or [`STEP`] has passed) and returns them in
    /// arrival order. Fewer than `count` means some never arrived; the caller asserts.
    pub async fn receive(&self, count: usize) -> Vec<AgavePacket> {
        let packets = self.packets.clone();
        let collect = tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + STEP;
            let mut out = Vec::with_capacity(count);
            while out.len() < count {
                let left = deadline.saturating_duration_since(Instant::now());
                match packets.recv_timeout(left) {
                    Ok(batch) => out.extend(unpack(&batch)),
                    Err(_) => break,
                }
            }
            out
        });
        // Not wrapped in `bounded`: the collector itself stops at its deadline.
        collect.await.expect("packet collector does not panic")
    }

    /// Stops the server, waits for its runtime thread to finish, and returns every packet it
    /// delivered that [`Self::receive`] did not take. Once the thread has ended every sender of
    /// the packet channel is gone, so this is the complete remainder, not a timed sample.
    pub async fn shutdown(self) -> Vec<AgavePacket> {
        self.cancel.cancel();
        let thread = self.thread;
        bounded(
            "Agave server shutdown",
            tokio::task::spawn_blocking(move || thread.join()),
        )
        .await
        .expect("join task does not panic")
        .expect("Agave server thread does not panic");
        self.packets.try_iter().flat_map(|b| unpack(&b)).collect()
    }
}

fn unpack(batch: &PacketBatch) -> Vec<AgavePacket> {
    batch
        .iter()
        .map(|packet| AgavePacket {
            bytes: packet.data(..).unwrap_or_default().to_vec(),
            remote_pubkey: packet.meta().remote_pubkey().map(|k| k.to_bytes()),
            from_staked_node: packet.meta().is_from_staked_node(),
        })
        .collect()
}

/// A leader schedule of one: every slot's leader is the server under test.
struct PinnedLeader(SocketAddr);

#[async_trait::async_trait]
impl LeaderUpdater for PinnedLeader {
    fn next_leaders(&mut self, _lookahead_leaders: usize) -> Vec<SocketAddr> {
        vec![self.0]
    }

    async fn stop(&mut self) {}
}

/// Agave's TPU client (`solana-tpu-client-next`, what RPC nodes and Agave's own forwarding use),
/// pinned to one target and presenting `identity` in its client certificate.
pub struct AgaveClient {
    sender: TransactionSender,
    client: Client,
}

impl AgaveClient {
    /// Must be called inside a tokio runtime: the client's scheduler runs on the current one.
    pub fn start(target: SocketAddr, identity: &Keypair) -> Self {
        let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
        let (sender, client) = ClientBuilder::new(Box::new(PinnedLeader(target)))
            .bind_socket(socket)
            .identity(identity)
            .leader_send_fanout(1)
            .max_cache_size(NonZeroUsize::new(4).expect("4 is non-zero"))
            .build()
            .expect("tpu-client-next builds with a bind socket");
        Self { sender, client }
    }

    /// Hands `transactions` to the client as one batch; it opens a stream per transaction.
    pub async fn send(&self, transactions: Vec<Vec<u8>>) {
        bounded(
            "tpu-client-next accepts a batch",
            self.sender.send_transactions_in_batch(transactions),
        )
        .await
        .expect("tpu-client-next scheduler is running");
    }

    /// Orderly shutdown: the scheduler drains its workers and closes its connections.
    pub async fn shutdown(self) {
        bounded("tpu-client-next shutdown", self.client.shutdown())
            .await
            .expect("tpu-client-next shuts down cleanly");
    }
}

/// A bare QUIC connection with the client configuration Agave's own streamer tests use
/// (`testing_utilities::get_client_config`: `solana-tpu` ALPN, the identity certificate of
/// `identity`), for probing a server's stream rules one stream at a time, which
/// tpu-client-next does not allow.
pub async fn agave_test_connection(target: SocketAddr, identity: &Keypair) -> quinn::Connection {
    let mut endpoint = quinn::Endpoint::client(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .expect("bind a client endpoint on 127.0.0.1");
    endpoint.set_default_client_config(get_client_config(identity));
    let connecting = endpoint
        .connect(target, "localhost")
        .expect("client configuration is complete");
    bounded("QUIC handshake", connecting)
        .await
        .expect("the server accepts the connection")
}
