//! parse → write: every header that parses encodes back to exactly the bytes it was read from.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((header, raw, _mac)) = zseal::format::Header::read(&mut &data[..]) {
        let again = header.encode_unauthenticated().expect("a parsed header encodes");
        assert_eq!(again, raw, "header did not round-trip");
    }
});
