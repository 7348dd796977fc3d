//! A test whose prerequisite is missing says which one and how to install
//! it, rather than failing on a bare assertion about the evidence.

mod common;

#[test]
fn a_missing_bubblewrap_is_named_with_its_install_command() {
    // The only test of this binary: no other thread reads the environment.
    std::env::set_var("VCC_BWRAP", "/nonexistent/vcc-no-bwrap");
    let err = common::bwrap_prerequisite("some_sandbox_test").unwrap_err();
    std::env::remove_var("VCC_BWRAP");
    for expected in [
        "some_sandbox_test needs bubblewrap (`bwrap`)",
        "VCC_BWRAP=/nonexistent/vcc-no-bwrap",
        "sudo apt-get install bubblewrap",
    ] {
        assert!(err.contains(expected), "{expected:?} in {err}");
    }
    let panic = std::panic::catch_unwind(|| {
        std::env::set_var("VCC_BWRAP", "/nonexistent/vcc-no-bwrap");
        common::require_bwrap("some_sandbox_test");
    })
    .unwrap_err();
    std::env::remove_var("VCC_BWRAP");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("install bubblewrap"), "{message}");
}
