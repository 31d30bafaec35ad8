// Package secrets encrypts the daemon's stored secrets with AES-256-GCM.
//
// Every sealed value binds the identity of the record it belongs to as
// associated data, so a ciphertext copied onto another record, or altered
// by a single bit, is refused. A sealed value starts with a format byte and
// the 4-byte id of the key that sealed it (a hash of the key), so a wrong
// key is reported as such and a Cipher can hold the old and the new key
// while a rotation is under way.
//
// The key is 32 random bytes, given by PROXMOPS_ENCRYPTION_KEY (base64 or
// hex) or kept in the key file `<databasePath>.key` (mode 0600), generated
// on first start.
package secrets
