#![no_main]
// libFuzzer's panic hook aborts at a panic before it unwinds, but the ONNX loader catches
// tract's own panics (hostile bytes reach its parser) and refuses the file: a silent hook lets
// them unwind to it. A panic that escapes the loader still ends the run as a crash.
libfuzzer_sys::fuzz_target!(
    init: std::panic::set_hook(Box::new(|_| {})),
    |data: &[u8]| ale_fuzz::policy_onnx(data)
);
