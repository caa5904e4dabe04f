#ifndef SETTLE_COPENSSL_SHIM_H
#define SETTLE_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/pkcs7.h>
#include <openssl/rsa.h>
#include <openssl/param_build.h>

// XN_FLAG_ONELINE is a macro composed of other macros, which Swift does not import.
static inline unsigned long settle_XN_FLAG_ONELINE(void) { return XN_FLAG_ONELINE; }

// A signedData's embedded certificates sit in a union member, which Swift cannot reach safely.
static inline STACK_OF(X509) *settle_PKCS7_certificates(PKCS7 *p7) {
    return PKCS7_type_is_signed(p7) && p7->d.sign != NULL ? p7->d.sign->cert : NULL;
}

// sk_PKCS7_SIGNER_INFO_num is a macro, which Swift does not import; -1 when not signedData.
static inline int settle_PKCS7_signer_count(PKCS7 *p7) {
    STACK_OF(PKCS7_SIGNER_INFO) *signers = PKCS7_get_signer_info(p7);
    return signers == NULL ? -1 : sk_PKCS7_SIGNER_INFO_num(signers);
}

// sk_X509_num, sk_X509_value and sk_X509_free are macros, which Swift does not import.
static inline int settle_X509_stack_count(STACK_OF(X509) *stack) { return sk_X509_num(stack); }
static inline X509 *settle_X509_stack_value(STACK_OF(X509) *stack, int i) { return sk_X509_value(stack, i); }
static inline void settle_X509_stack_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }

// EVP_PKEY_PUBLIC_KEY is a macro composed of other macros, which Swift does not import.
static inline int settle_EVP_PKEY_PUBLIC_KEY(void) { return EVP_PKEY_PUBLIC_KEY; }

#endif
