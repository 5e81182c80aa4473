//! Certificates and keys from PEM: one certified key (a chain and its private key) per name,
//! each error saying which file and what is wrong with it.

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

/// A certificate chain and its key, from PEM text (the files' contents); `what` names them in
/// errors.
pub(crate) fn certified_key(
    cert_pem: &[u8],
    key_pem: &[u8],
    what: &str,
) -> io::Result<Arc<CertifiedKey>> {
    let chain = certificates(cert_pem, what)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| invalid(format!("{what}: no private key in the key PEM ({e})")))?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key).map_err(|e| {
        invalid(format!(
            "{what}: the private key is not one TLS can use ({e})"
        ))
    })?;
    let certified = CertifiedKey::new(chain, signer);
    certified.keys_match().map_err(|e| {
        invalid(format!(
            "{what}: the private key is not the certificate's ({e})"
        ))
    })?;
    Ok(Arc::new(certified))
}

/// Every certificate in a PEM text, in order (the leaf first); at least one.
pub(crate) fn certificates(pem: &[u8], what: &str) -> io::Result<Vec<CertificateDer<'static>>> {
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            invalid(format!(
                "{what}: a certificate in the PEM cannot be read ({e})"
            ))
        })?;
    if chain.is_empty() {
        return Err(invalid(format!("{what}: no certificate in the PEM")));
    }
    Ok(chain)
}

/// A certified key from a certificate chain file and a key file, both PEM.
pub(crate) fn certified_key_files(cert: &Path, key: &Path) -> io::Result<Arc<CertifiedKey>> {
    let read = |path: &Path| {
        std::fs::read(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    };
    let what = format!("{} and {}", cert.display(), key.display());
    certified_key(&read(cert)?, &read(key)?, &what)
}

pub(crate) fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (String, String) {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        (made.cert.pem(), made.signing_key.serialize_pem())
    }

    #[test]
    fn a_chain_and_its_key_make_a_certified_key() {
        let (cert, key) = pair();
        assert!(certified_key(cert.as_bytes(), key.as_bytes(), "t").is_ok());
    }

    #[test]
    fn each_wrong_input_says_what_is_wrong() {
        let (cert, key) = pair();
        let (_, other_key) = pair();
        let cases: [(&str, &str, &str); 4] = [
            ("", &key, "no certificate"),
            (&cert, "", "no private key"),
            (&cert, &other_key, "not the certificate's"),
            (
                "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
                &key,
                "cannot be read",
            ),
        ];
        for (cert, key, says) in cases {
            let err = certified_key(cert.as_bytes(), key.as_bytes(), "t").unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains(says), "{err} should say {says}");
        }
    }

    #[test]
    fn a_missing_file_names_itself() {
        let err =
            certified_key_files(Path::new("/nonexistent/c.pem"), Path::new("/k.pem")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("/nonexistent/c.pem"));
    }
}
