//! Header parsing of arbitrary bytes: never panics, never allocates past the declared limits.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = zseal::format::Header::read(&mut &data[..]);
    let _ = zseal::inspect::inspect_file(std::io::Cursor::new(data));
});
