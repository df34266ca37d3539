//! Fails when the simulation suite was expected but compiled away.
//!
//! `cargo stest` turns on `--cfg madsim` through `target.rustflags`, but a `RUSTFLAGS` in the
//! environment silently takes precedence and every `#![cfg(madsim)]` test file then compiles to
//! nothing. CI sets `EXPECT_SIM=1` for the simulation run, so that situation fails loudly here.

#[test]
fn simulation_cfg_is_active_when_expected() {
    let expected = std::env::var_os("EXPECT_SIM").is_some_and(|v| v == "1");
    assert!(
        cfg!(madsim) || !expected,
        "EXPECT_SIM=1 but this test binary was built without --cfg madsim: the simulation suite \
         compiled away (is RUSTFLAGS set in the environment? it overrides the `cargo stest` alias)"
    );
}
