//! The sandbox's launcher on its own, for this crate's tests: `ale-sandbox-test sandbox-exec`
//! does what `ale sandbox-exec` (the launcher the harness starts) does, so that the tests in
//! `tests/` start the real launcher without building the whole `ale`. Not installed with `ale`.

fn main() {
    let mut args = std::env::args_os().skip(1);
    match (args.next(), args.next()) {
        (Some(command), None) if command == ale_sandbox::LAUNCHER_SUBCOMMAND => {
            // Before any thread exists: the launcher creates user namespaces.
            ale_sandbox::launcher_main()
        }
        _ => {
            eprintln!(
                "usage: ale-sandbox-test {} < LAUNCH_SPEC_JSON",
                ale_sandbox::LAUNCHER_SUBCOMMAND
            );
            std::process::exit(2)
        }
    }
}
