pub mod pb {
    tonic::include_proto!("ale.v1");
}
