//! A throwaway PKI made by the openssl command (scripts/test.sh installs
//! it): a CA and a server certificate it signed for 127.0.0.1, for the
//! HTTPS, TLS-ping and rediss:// tests.

use std::path::Path;

/// Runs `openssl ARGS...` in `dir`; fails the test, with openssl's
/// message, if it fails.
pub fn openssl(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl (scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `openssl req` options for a fresh P-256 key, unencrypted.
const EC: [&str; 5] = [
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
];

/// A CA, a server certificate it signed for 127.0.0.1, and their keys, made
/// by the openssl command (scripts/test.sh installs it) in a fresh directory.
pub struct Pki {
    pub dir: tempfile::TempDir,
}

impl Pki {
    pub fn new() -> Pki {
        let pki = Pki {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        let mut ca = vec!["req", "-x509"];
        ca.extend(EC);
        ca.extend([
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=retry test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign",
        ]);
        pki.openssl(&ca);
        let mut csr = vec!["req"];
        csr.extend(EC);
        csr.extend([
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ]);
        pki.openssl(&csr);
        pki.sign_for_localhost("server", "ext.cnf", "serverAuth");
        pki
    }

    /// Runs openssl in the directory.
    pub fn openssl(&self, args: &[&str]) {
        openssl(self.dir.path(), args);
    }

    /// `NAME.pem`: the CA's signature on `NAME.csr`, for 127.0.0.1 and the
    /// extended key `usage`, not a CA; its extensions are written to `ext`.
    pub fn sign_for_localhost(&self, name: &str, ext: &str, usage: &str) {
        std::fs::write(
            self.dir.path().join(ext),
            format!(
                "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage={usage}\n"
            ),
        )
        .unwrap_or_else(|e| panic!("write {ext}: {e}"));
        let (csr, pem) = (format!("{name}.csr"), format!("{name}.pem"));
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            "2",
            "-extfile",
            ext,
        ]);
    }

    /// `NAME.pem` and `NAME.key`: a self-signed certificate for `cn` as the
    /// usual one-liner makes it (no alternative names, marked as a CA).
    pub fn self_signed(&self, name: &str, cn: &str) {
        let (key, pem, subj) = (
            format!("{name}.key"),
            format!("{name}.pem"),
            format!("/CN={cn}"),
        );
        let mut args = vec!["req", "-x509"];
        args.extend(EC);
        args.extend(["-keyout", &key, "-out", &pem, "-days", "2", "-subj", &subj]);
        self.openssl(&args);
    }

    /// `NAME.pem` and `NAME.key`: a self-signed certificate for `cn` that
    /// expired in 2020 (`openssl ca` sets the dates).
    pub fn expired(&self, name: &str, cn: &str) {
        let dir = self.dir.path();
        std::fs::write(
            dir.join("ca.cnf"),
            "[ca]\ndefault_ca = d\n[d]\ndatabase = index.txt\nnew_certs_dir = .\n\
             serial = serial\ndefault_md = sha256\npolicy = p\nx509_extensions = e\n\
             [p]\ncommonName = supplied\n[e]\nbasicConstraints = CA:FALSE\n",
        )
        .expect("write ca.cnf");
        std::fs::write(dir.join("index.txt"), "").expect("write index.txt");
        std::fs::write(dir.join("serial"), "01\n").expect("write serial");
        let (key, csr, subj) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("/CN={cn}"),
        );
        let mut args = vec!["req", "-new"];
        args.extend(EC);
        args.extend(["-keyout", &key, "-out", &csr, "-subj", &subj]);
        self.openssl(&args);
        self.openssl(&[
            "ca",
            "-batch",
            "-config",
            "ca.cnf",
            "-selfsign",
            "-keyfile",
            &key,
            "-in",
            &csr,
            "-startdate",
            "20200101000000Z",
            "-enddate",
            "20200102000000Z",
            "-out",
            &format!("{name}.pem"),
        ]);
    }

    pub fn path(&self, name: &str) -> String {
        self.dir
            .path()
            .join(name)
            .to_str()
            .expect("utf-8")
            .to_string()
    }
}
