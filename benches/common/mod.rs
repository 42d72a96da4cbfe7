//! Shared by the benches.

use zseal::{Argon2Params, Passphrase};

/// Cheap Argon2: the key derivation is measured by its own bench, never inside throughput.
pub fn pw() -> Passphrase {
    Passphrase::with_params(
        "bench",
        Argon2Params {
            m_cost: 64,
            t_cost: 1,
            p_cost: 1,
        },
    )
    .unwrap()
}
