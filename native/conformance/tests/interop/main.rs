//! Conformance of Landfall's native QUIC TPU endpoint with the Agave validator's own code, all on
//! 127.0.0.1: Landfall's client against Agave's TPU server, Agave's TPU client against Landfall's
//! server, and the stream rules both servers must agree on. See README.md for what each test
//! proves.

mod harness;

mod agave_control;
mod landfall_client;
mod landfall_server;
mod limits;
