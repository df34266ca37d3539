//! `cargo sim …`: the scenarios CLI. Only `list` exists until the scenario library lands.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("list") => {
            let scenarios = scenarios::registry();
            if scenarios.is_empty() {
                println!("no scenarios registered yet");
            }
            for s in scenarios {
                println!("{:<16} {}", s.name, s.summary);
            }
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("unknown command `{other}`; available: list");
            ExitCode::from(2)
        }
        None => {
            eprintln!("usage: cargo sim list");
            ExitCode::from(2)
        }
    }
}
