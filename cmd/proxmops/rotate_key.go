package main

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/store"
)

// Environment variables of the encryption key.
const (
	envEncryptionKey    = "PROXMOPS_ENCRYPTION_KEY"
	envNewEncryptionKey = "PROXMOPS_NEW_ENCRYPTION_KEY"
)

func init() {
	cmd := &cobra.Command{
		Use:   "rotate-key",
		Short: "Re-encrypt every stored secret with a new encryption key",
		Long: "rotate-key generates a new encryption key and re-encrypts every secret in the database with it,\n" +
			"in one transaction, then replaces the key file (server.keyFile, default <databasePath>.key; an interrupted\n" +
			"rotation is finished on the next start). It acts on the database of the configuration the daemon reads\n" +
			"(/etc/proxmops/proxmops.yaml when it exists, else --config or PROXMOPS_CONFIG), and the new key file keeps\n" +
			"the old one's owner and mode, so a rotation run with sudo leaves it readable by the service's user. With PostgreSQL, stop every replica first and copy the new key file to each.\n" +
			"When the key comes from " + envEncryptionKey + ", give the new one in " + envNewEncryptionKey + "\n" +
			"and start the daemon with it afterwards. On SQLite it refuses to run while a daemon uses the database.",
		Args: cobra.NoArgs,
	}
	flags := config.BindFlags(cmd.Flags(), "server.databasePath", "server.database", "server.keyFile")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, warnings, err := flags.Load()
		if err != nil {
			return err
		}
		for _, w := range warnings {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
		}
		if cfg.Server.Database == "" { // SQLite: one writer at a time
			if _, err := os.Stat(cfg.Server.DatabasePath); err != nil {
				return fmt.Errorf("database %s: %w", cfg.Server.DatabasePath, err)
			}
			lock, err := store.LockWriter(cfg.Server.DatabasePath, "rotate-key", "")
			if err != nil {
				return err
			}
			defer lock.Release()
		}
		st, err := store.Open(cmd.Context(), store.ServerOptions(cfg.Server, os.Getenv(envEncryptionKey)))
		if err != nil {
			return err
		}
		defer st.Close()
		alone, err := st.LockAlone(cmd.Context()) // PostgreSQL: no replica may run
		if err != nil {
			return err
		}
		defer alone()
		old := st.KeyID()
		id, err := st.RotateKey(cmd.Context(), os.Getenv(envNewEncryptionKey))
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "every secret in %s is now encrypted with key %s (was %s)\n", st.Where(), id, old)
		if kf := st.KeyFile(); kf != "" {
			fmt.Fprintf(cmd.OutOrStdout(), "the key file %s keeps %s\n", kf, ownerAndMode(kf))
		}
		if cfg.Server.Database != "" && os.Getenv(envEncryptionKey) == "" {
			fmt.Fprintf(cmd.OutOrStdout(), "copy %s to every replica before starting them again\n", cfg.Server.KeyFile)
		}
		if os.Getenv(envEncryptionKey) != "" {
			fmt.Fprintf(cmd.OutOrStdout(), "start the daemon with %s set to the new key\n", envEncryptionKey)
		}
		return nil
	}
	rootCmd.AddCommand(cmd)
}

// ownerAndMode describes a file's owner, group and permission bits, as
// names where the system knows them.
func ownerAndMode(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "(cannot tell: " + err.Error() + ")"
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Sprintf("mode %04o", fi.Mode().Perm())
	}
	owner, group := strconv.Itoa(int(st.Uid)), strconv.Itoa(int(st.Gid))
	if u, err := user.LookupId(owner); err == nil {
		owner = u.Username
	}
	if g, err := user.LookupGroupId(group); err == nil {
		group = g.Name
	}
	return fmt.Sprintf("owner %s:%s and mode %04o", owner, group, fi.Mode().Perm())
}
