//! An archive's member index (FORMAT.md §15.2) made from tars GNU tar writes, in pax and GNU
//! format: every member `tar t` lists, with offsets that hold exactly its bytes; the index's
//! bytes round trip, and every rule of §15.2 refuses what breaks it.

use std::path::Path;
use std::process::Command;

use zseal::archive::{index_tar, Index, MemberType};

/// A tree of every kind an archive holds: files (one empty), directories, a name past ustar's
/// 100 and 155 bytes, a non-ASCII name, a symbolic and a hard link; one mtime with nanoseconds.
fn tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let long = format!("{}/{}", "d".repeat(120), "f".repeat(130));
    let files: Vec<(String, Vec<u8>)> = vec![
        ("a.txt".into(), b"alpha\n".to_vec()),
        ("empty".into(), Vec::new()),
        ("dir/nested.bin".into(), crate::common::noise(100_000, 3)),
        (long, b"a long name\n".to_vec()),
        ("caf\u{e9}/na\u{ef}ve.txt".into(), b"non-ASCII\n".to_vec()),
    ];
    for (name, bytes) in &files {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
    }
    let when = std::time::UNIX_EPOCH + std::time::Duration::new(1_765_000_000, 123_456_789);
    std::fs::File::options()
        .write(true)
        .open(root.join("a.txt"))
        .unwrap()
        .set_modified(when)
        .unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
    std::fs::hard_link(root.join("a.txt"), root.join("hard")).unwrap();
    files
}

/// `tar --format=FORMAT -c .` of `root`, sorted by name.
fn gnu_tar(root: &Path, format: &str) -> Vec<u8> {
    let out = Command::new("tar")
        .args([
            "--sort=name",
            &format!("--format={format}"),
            "-cf",
            "-",
            ".",
        ])
        .current_dir(root)
        .output()
        .expect("GNU tar");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The names `tar t` prints, unquoted.
fn listed(tar: &[u8]) -> Vec<Vec<u8>> {
    let mut c = Command::new("tar")
        .args(["--quoting-style=literal", "-tf", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    c.stdin.take().unwrap().write_all(tar).unwrap();
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

#[test]
fn the_index_of_gnu_tars_holds_every_member_at_its_bytes() {
    for format in ["pax", "gnu"] {
        let d = tempfile::tempdir().unwrap();
        let files = tree(d.path());
        let tar = gnu_tar(d.path(), format);
        let index = index_tar(&tar[..]).unwrap();
        let names: Vec<Vec<u8>> = index.members.iter().map(|m| m.path.clone()).collect();
        assert_eq!(
            names,
            listed(&tar),
            "{format}: the names tar t prints, in its order"
        );
        for (name, bytes) in &files {
            let m = (index.members.iter())
                .find(|m| m.path == format!("./{name}").as_bytes())
                .unwrap_or_else(|| panic!("{format}: {name} is missing"));
            assert_eq!(m.kind, MemberType::File);
            assert_eq!(m.size, bytes.len() as u64, "{format}: {name}");
            let at = m.data_offset as usize;
            assert!(
                tar[at..at + bytes.len()] == bytes[..],
                "{format}: {name}'s bytes"
            );
        }
        let by = |p: &str| {
            (index.members.iter())
                .find(|m| m.path == p.as_bytes())
                .unwrap_or_else(|| panic!("{format}: {p}"))
        };
        let link = by("./link");
        assert_eq!(
            (link.kind, link.link.as_slice()),
            (MemberType::Symlink, &b"a.txt"[..])
        );
        let hard = by("./hard");
        assert_eq!(hard.kind, MemberType::HardLink, "{format}");
        assert!(
            hard.link == b"./a.txt" || hard.link == b"./hard",
            "{format}"
        );
        assert_eq!(by("./dir/").kind, MemberType::Directory);
        let a = by("./a.txt");
        let nanos = if format == "pax" { 123_456_789 } else { 0 };
        assert_eq!(a.mtime, (1_765_000_000, nanos), "{format}");
        // Each member's first header block is a tar header (its checksum holds), and the tar
        // ends in two zero blocks at tar_len.
        for m in &index.members {
            let block = &tar[m.header_offset as usize..m.header_offset as usize + 512];
            let sum: u32 = (block.iter().enumerate())
                .map(|(i, &b)| {
                    if (148..156).contains(&i) {
                        32
                    } else {
                        u32::from(b)
                    }
                })
                .sum();
            let field = std::str::from_utf8(&block[148..155]).unwrap();
            let stored = u32::from_str_radix(field.trim_matches(|c| c == ' ' || c == '\0'), 8);
            assert_eq!(stored.ok(), Some(sum), "{format}: {:?}", m.path);
            assert!(m.data_offset > m.header_offset);
        }
        let end = index.tar_len as usize;
        assert!(end <= tar.len() && tar[end - 1024..end].iter().all(|&b| b == 0));

        // Its bytes round trip; §15.2's rules refuse what breaks them.
        let bytes = index.encode(1).unwrap();
        assert_eq!(Index::decode(&bytes, 1, tar.len() as u64).unwrap(), index);
        assert!(
            Index::decode(&bytes, 2, tar.len() as u64).is_err(),
            "frame count"
        );
        assert!(
            Index::decode(&bytes, 1, index.tar_len - 512).is_err(),
            "past the plaintext"
        );
        assert!(
            Index::decode(&bytes[..bytes.len() - 1], 1, u64::MAX).is_err(),
            "cut"
        );
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Index::decode(&longer, 1, u64::MAX).is_err(), "a byte after");
        let mut swapped = index.clone();
        swapped.members.swap(1, 2);
        let b = swapped.encode(1).unwrap();
        assert!(Index::decode(&b, 1, u64::MAX).is_err(), "out of order");
        let mut odd = index.clone();
        odd.members[0].data_offset += 1;
        let b = odd.encode(1).unwrap();
        assert!(Index::decode(&b, 1, u64::MAX).is_err(), "not a block");
        let mut magic = bytes.clone();
        magic[0] ^= 1;
        assert!(Index::decode(&magic, 1, u64::MAX).is_err(), "magic");
        // Every cut of the bytes is refused, never read as a shorter list.
        for n in (0..bytes.len()).step_by(7) {
            assert!(
                Index::decode(&bytes[..n], 1, u64::MAX).is_err(),
                "cut at {n}"
            );
        }
    }
}

#[test]
fn what_is_not_a_tar_is_refused_by_name() {
    let e = index_tar(&crate::common::noise(4096, 9)[..]).unwrap_err();
    assert!(e.to_string().contains("not a tar archive"), "{e}");
    // A tar cut inside its last member's pax header (the long name's record).
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("x".repeat(200)), b"x").unwrap();
    let tar = gnu_tar(d.path(), "pax");
    let index = index_tar(&tar[..]).unwrap();
    let last = index.members.last().unwrap();
    let cut = &tar[..last.header_offset as usize + 512];
    let e = index_tar(cut).unwrap_err();
    assert!(e.to_string().contains("not a tar archive"), "{e}");
}

/// A reader that fails mid-tar (a chunk that fails authentication, a lost connection) fails
/// the index with its own error, not as "not a tar".
#[test]
fn a_failing_reader_is_named_not_taken_for_a_bad_tar() {
    struct Cut<'a>(&'a [u8]);
    impl std::io::Read for Cut<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                let e = zseal::Error::ChunkAuth(3);
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e));
            }
            let n = buf.len().min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let d = tempfile::tempdir().unwrap();
    tree(d.path());
    let tar = gnu_tar(d.path(), "pax");
    let e = index_tar(Cut(&tar[..3000])).unwrap_err();
    assert!(matches!(e, zseal::Error::ChunkAuth(3)), "{e}");
}
