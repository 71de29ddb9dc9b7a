#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ale_fuzz::task_file(data));
