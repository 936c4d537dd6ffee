//! TLS for the TPU: the self-signed ed25519 identity certificate, the rustls client and server
//! configurations, and reading a peer's identity key back out of its certificate.
//!
//! TPU peers are identified by their ed25519 identity key, not by a name a CA vouches for, so
//! neither side validates the other's certificate chain. Both still verify the TLS 1.3
//! CertificateVerify signature against the key in the certificate (rustls does that with the
//! provider's algorithms), which proves the peer holds the private key of the identity it
//! presents. That is exactly what Agave's `SkipServerVerification` / `SkipClientVerification`
//! do.

use super::error::QuicError;
use super::protocol::ALPN_TPU;
use ed25519_dalek::{Signer, SigningKey};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, NamedGroup, SignatureScheme};
use std::net::SocketAddr;
use std::sync::Arc;

/// The public key of the ed25519 identity whose 32-byte secret seed is `seed`.
pub fn identity_pubkey(seed: &[u8; 32]) -> [u8; 32] {
    SigningKey::from_bytes(seed).verifying_key().to_bytes()
}

// ---- DER ------------------------------------------------------------------------------------

const TAG_INTEGER: u8 = 0x02;
const TAG_BIT_STRING: u8 = 0x03;
const TAG_OCTET_STRING: u8 = 0x04;
const TAG_OID: u8 = 0x06;
const TAG_UTF8_STRING: u8 = 0x0c;
const TAG_UTC_TIME: u8 = 0x17;
const TAG_GENERALIZED_TIME: u8 = 0x18;
const TAG_SEQUENCE: u8 = 0x30;
const TAG_SET: u8 = 0x31;
/// `[0]` constructed, context-specific: the certificate `version` field.
const TAG_VERSION: u8 = 0xa0;

/// Object identifier 1.3.101.112, id-Ed25519 (RFC 8410), content bytes.
const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];
/// Object identifier 2.5.4.3, id-at-commonName, content bytes.
const OID_COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];

/// One DER TLV: `tag`, definite length (short or long form), `content`.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let len = content.len();
    let mut out = Vec::with_capacity(len + 4);
    out.push(tag);
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

fn der_seq(parts: &[&[u8]]) -> Vec<u8> {
    der(TAG_SEQUENCE, &parts.concat())
}

/// A BIT STRING holding whole bytes (zero unused bits).
fn der_bits(bytes: &[u8]) -> Vec<u8> {
    der(TAG_BIT_STRING, &[&[0u8][..], bytes].concat())
}

/// The id-Ed25519 AlgorithmIdentifier (no parameters, RFC 8410 §3).
fn ed25519_algorithm() -> Vec<u8> {
    der_seq(&[&der(TAG_OID, OID_ED25519)])
}

/// A Name with one common name.
fn der_name(common_name: &str) -> Vec<u8> {
    let attribute = der_seq(&[
        &der(TAG_OID, OID_COMMON_NAME),
        &der(TAG_UTF8_STRING, common_name.as_bytes()),
    ]);
    der_seq(&[&der(TAG_SET, &attribute)])
}

/// The certificate and PKCS#8 private key of the identity `seed`, as rustls takes them.
///
/// An X.509 v3 certificate, self-signed with the identity key itself: subject = issuer
/// "Solana node", valid from 1970 to 4096 (identity keys do not expire; Agave uses the same
/// window), SubjectPublicKeyInfo = the ed25519 identity key. Unlike Agave's (whose signature is
/// deliberately 0xff…), the signature is real, so strict X.509 tooling accepts it too.
pub fn self_signed_identity(seed: &[u8; 32]) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let key = SigningKey::from_bytes(seed);
    let public = key.verifying_key().to_bytes();
    // A positive 8-byte serial derived from the key: the top byte in 0x40..=0x7f keeps the
    // INTEGER minimal (no leading zero needed) and positive.
    let mut serial = [0u8; 8];
    serial.copy_from_slice(&public[..8]);
    serial[0] = (serial[0] & 0x7f) | 0x40;
    let name = der_name("Solana node");
    let tbs = der_seq(&[
        &der(TAG_VERSION, &der(TAG_INTEGER, &[2])),
        &der(TAG_INTEGER, &serial),
        &ed25519_algorithm(),
        &name,
        &der_seq(&[
            &der(TAG_UTC_TIME, b"700101000000Z"),
            &der(TAG_GENERALIZED_TIME, b"40960101000000Z"),
        ]),
        &name,
        &der_seq(&[&ed25519_algorithm(), &der_bits(&public)]),
    ]);
    let signature = key.sign(&tbs).to_bytes();
    let cert = der_seq(&[&tbs, &ed25519_algorithm(), &der_bits(&signature)]);
    // PKCS#8 v1 (RFC 8410 §7): version 0, id-Ed25519, OCTET STRING { OCTET STRING seed }.
    let pkcs8 = der_seq(&[
        &der(TAG_INTEGER, &[0]),
        &ed25519_algorithm(),
        &der(TAG_OCTET_STRING, &der(TAG_OCTET_STRING, seed)),
    ]);
    (
        CertificateDer::from(cert),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pkcs8)),
    )
}

/// A DER reader over one level of TLVs.
struct DerReader<'a> {
    rest: &'a [u8],
}

impl<'a> DerReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        DerReader { rest: bytes }
    }

    /// The next TLV as (tag, content), or None when the input is exhausted or malformed.
    fn next(&mut self) -> Option<(u8, &'a [u8])> {
        let (&tag, rest) = self.rest.split_first()?;
        let (&first, mut rest) = rest.split_first()?;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || rest.len() < n {
                return None;
            }
            let (len_bytes, after) = rest.split_at(n);
            rest = after;
            len_bytes
                .iter()
                .fold(0usize, |acc, &b| (acc << 8) | usize::from(b))
        };
        if rest.len() < len {
            return None;
        }
        let (content, after) = rest.split_at(len);
        self.rest = after;
        Some((tag, content))
    }

    /// The content of the next TLV if it has tag `tag`.
    fn expect(&mut self, tag: u8) -> Option<&'a [u8]> {
        self.next().and_then(|(t, c)| (t == tag).then_some(c))
    }
}

/// The ed25519 identity key in a peer's certificate, or None if the certificate does not carry
/// an id-Ed25519 SubjectPublicKeyInfo. Reads only the fields it needs (like Agave's
/// `get_pubkey_from_tls_certificate`), so it never fails on extensions or odd names.
pub fn peer_pubkey_from_cert(cert: &[u8]) -> Option<[u8; 32]> {
    let certificate = DerReader::new(cert).expect(TAG_SEQUENCE)?;
    let mut tbs = DerReader::new(DerReader::new(certificate).expect(TAG_SEQUENCE)?);
    let (mut tag, _) = tbs.next()?;
    if tag == TAG_VERSION {
        tag = tbs.next()?.0; // serialNumber
    }
    if tag != TAG_INTEGER {
        return None;
    }
    // signature, issuer, validity, subject
    for _ in 0..4 {
        tbs.expect(TAG_SEQUENCE)?;
    }
    let mut spki = DerReader::new(tbs.expect(TAG_SEQUENCE)?);
    let mut algorithm = DerReader::new(spki.expect(TAG_SEQUENCE)?);
    if algorithm.expect(TAG_OID)? != OID_ED25519 {
        return None;
    }
    match spki.expect(TAG_BIT_STRING)? {
        [0, key @ ..] => key.try_into().ok(),
        _ => None,
    }
}

// ---- rustls configuration -------------------------------------------------------------------

/// ring with X25519 as the only key exchange group, as Agave's `crypto_provider()` configures it.
fn provider() -> Arc<CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    provider
        .kx_groups
        .retain(|kx| kx.name() == NamedGroup::X25519);
    Arc::new(provider)
}

fn tls_error(e: impl std::fmt::Display) -> QuicError {
    QuicError::Tls(e.to_string())
}

/// The server name a client asks for: `{ip}.{port}.sol`, as Agave's
/// `socket_addr_to_quic_server_name` builds it. Nothing checks it against a certificate; it is
/// unique per peer so session tickets and address-validation tokens go back to the server that
/// issued them. An IPv6 address is written as its eight hex groups joined by dots, because rustls
/// only takes a valid DNS name and colons are not one.
pub fn server_name(addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => format!("{}.{}.sol", a.ip(), a.port()),
        SocketAddr::V6(a) => {
            let groups: Vec<String> = a.ip().segments().iter().map(|g| format!("{g:x}")).collect();
            format!("{}.{}.sol", groups.join("."), a.port())
        }
    }
}

/// The rustls client configuration: client certificate = the identity, ALPN `solana-tpu`, TLS 1.3,
/// any server certificate accepted (its handshake signature still checked).
pub(crate) fn client_crypto(
    seed: &[u8; 32],
) -> Result<quinn::crypto::rustls::QuicClientConfig, QuicError> {
    let provider = provider();
    let (cert, key) = self_signed_identity(seed);
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(tls_error)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServerCert(provider)))
        .with_client_auth_cert(vec![cert], key)
        .map_err(tls_error)?;
    tls.alpn_protocols = vec![ALPN_TPU.to_vec()];
    quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(tls_error)
}

/// The rustls server configuration: the identity certificate, ALPN `solana-tpu`, TLS 1.3, a
/// client certificate required (as Agave's verifier does by default) but any one accepted.
pub(crate) fn server_crypto(
    seed: &[u8; 32],
) -> Result<quinn::crypto::rustls::QuicServerConfig, QuicError> {
    let provider = provider();
    let (cert, key) = self_signed_identity(seed);
    let mut tls = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(tls_error)?
        .with_client_cert_verifier(Arc::new(AnyClientCert(provider)))
        .with_single_cert(vec![cert], key)
        .map_err(tls_error)?;
    tls.alpn_protocols = vec![ALPN_TPU.to_vec()];
    quinn::crypto::rustls::QuicServerConfig::try_from(tls).map_err(tls_error)
}

/// Accepts any server certificate; verifies the handshake signature made with its key.
#[derive(Debug)]
struct AnyServerCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Requires a client certificate and accepts any; verifies the handshake signature made with
/// its key.
#[derive(Debug)]
struct AnyClientCert(Arc<CryptoProvider>);

impl ClientCertVerifier for AnyClientCert {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The identity key of the peer of an established connection: its certificate chain must be
/// exactly one certificate (a self-signed identity) carrying an ed25519 key.
pub(crate) fn connection_peer(connection: &quinn::Connection) -> Option<[u8; 32]> {
    let chain = connection
        .peer_identity()?
        .downcast::<Vec<CertificateDer<'static>>>()
        .ok()?;
    match chain.as_slice() {
        [cert] => peer_pubkey_from_cert(cert),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_carries_the_identity_key_and_a_valid_self_signature() {
        let seed = [7u8; 32];
        let (cert, _) = self_signed_identity(&seed);
        assert_eq!(peer_pubkey_from_cert(&cert), Some(identity_pubkey(&seed)));
        // Verify the self-signature: tbsCertificate signed by the identity key.
        let outer = DerReader::new(&cert).expect(TAG_SEQUENCE).unwrap();
        let mut r = DerReader::new(outer);
        let tbs_content = r.expect(TAG_SEQUENCE).unwrap();
        let tbs = der(TAG_SEQUENCE, tbs_content);
        r.expect(TAG_SEQUENCE).unwrap();
        let sig = r.expect(TAG_BIT_STRING).unwrap();
        let sig = ed25519_dalek::Signature::from_slice(&sig[1..]).unwrap();
        let key = ed25519_dalek::VerifyingKey::from_bytes(&identity_pubkey(&seed)).unwrap();
        key.verify_strict(&tbs, &sig).unwrap();
    }

    #[test]
    fn long_form_lengths_round_trip() {
        let content = vec![0xabu8; 300];
        let tlv = der(TAG_OCTET_STRING, &content);
        assert_eq!(&tlv[..4], &[TAG_OCTET_STRING, 0x82, 0x01, 0x2c]);
        assert_eq!(
            DerReader::new(&tlv).expect(TAG_OCTET_STRING),
            Some(&content[..])
        );
    }

    #[test]
    fn truncated_or_foreign_certificates_give_no_key() {
        let (cert, _) = self_signed_identity(&[1u8; 32]);
        for cut in 0..cert.len() {
            assert_eq!(peer_pubkey_from_cert(&cert[..cut]), None, "cut at {cut}");
        }
        assert_eq!(peer_pubkey_from_cert(b""), None);
        assert_eq!(peer_pubkey_from_cert(&[0x30, 0x85, 1, 2, 3, 4, 5]), None);
    }

    #[test]
    fn server_names_are_valid_dns_names() {
        for addr in ["127.0.0.1:8009", "[::1]:8009", "[2001:db8::7]:1"] {
            let name = server_name(addr.parse().unwrap());
            assert!(ServerName::try_from(name.as_str()).is_ok(), "{name}");
        }
        assert_eq!(
            server_name("10.0.0.2:8009".parse().unwrap()),
            "10.0.0.2.8009.sol"
        );
    }

    #[test]
    fn rustls_accepts_the_generated_key_and_certificate() {
        client_crypto(&[3u8; 32]).unwrap();
        server_crypto(&[4u8; 32]).unwrap();
    }
}
