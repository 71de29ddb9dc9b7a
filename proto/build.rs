//! Compiles the `ale.v1` protos with protox (pure Rust), so no `protoc` is needed anywhere.

use std::path::PathBuf;

use prost::Message;

const PROTOS: &[&str] = &[
    "ale/v1/types.proto",
    "ale/v1/ale_env.proto",
    "ale/v1/catalog.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(PROTOS, ["proto"])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    // Served by the reflection service so generic gRPC tools can discover the API.
    std::fs::write(out_dir.join("ale_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
