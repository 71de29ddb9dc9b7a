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
    // The sim-host protocol: messages only (no service), not served by reflection; its
    // Tensor and Space are the wire's own.
    // Written to a folder of its own: the `ale.v1` it imports is generated there again, and
    // must not overwrite the module above.
    let host = protox::compile(["ale/simhost/v1/sim_host.proto"], ["proto"])?;
    let host_dir = out_dir.join("sim_host");
    std::fs::create_dir_all(&host_dir)?;
    tonic_prost_build::configure()
        .out_dir(host_dir)
        .build_client(false)
        .build_server(false)
        .extern_path(".ale.v1", "crate::pb")
        .compile_fds(host)?;
    Ok(())
}
