//! Full decryption of arbitrary bytes with the test vectors' passphrase, streaming on one and two
//! threads and through the seekable range path: never panics, and whatever succeeds is consistent.
#![no_main]
use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use zseal::{Argon2Params, DecryptOptions, Decryptor, Passphrase};

fuzz_target!(|data: &[u8]| {
    // Keep each run fast: skip files that ask Argon2 for more than 1 MiB (the cap itself is tested).
    if let Ok((h, _, _)) = zseal::format::Header::read(&mut &data[..]) {
        let heavy = h.stanzas.iter().any(|s| {
            s.kind == 1 && s.body.len() >= 20 && u32::from_le_bytes(s.body[16..20].try_into().unwrap()) > 1024
        });
        if heavy {
            return;
        }
    }
    let pw = Passphrase::with_params("vector passphrase", Argon2Params { m_cost: 64, t_cost: 1, p_cost: 1 }).unwrap();
    let mut outs = Vec::new();
    for threads in [1, 2] {
        let r = Decryptor::new(data, &[&pw], &DecryptOptions::default().threads(threads)).and_then(|mut d| {
            let mut out = Vec::new();
            d.copy_to(&mut out).map(|_| out)
        });
        outs.push(r.map_err(|e| e.kind()));
    }
    assert_eq!(outs[0], outs[1], "one and two threads disagree");
    if let Ok(mut d) = Decryptor::new(Cursor::new(data), &[&pw], &DecryptOptions::default().threads(2)) {
        if let Ok(len) = d.plaintext_len() {
            let mut slice = Vec::new();
            if d.copy_range_to(len / 3, Some(len / 2), &mut slice).is_ok() {
                if let Ok(full) = &outs[0] {
                    assert_eq!(&slice[..], &full[(len / 3) as usize..(len / 2) as usize]);
                }
            }
        }
    }
});
