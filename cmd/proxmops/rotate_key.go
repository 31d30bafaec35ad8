package main

import (
	"fmt"
	"os"

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
			"in one transaction, then replaces <databasePath>.key (an interrupted rotation is finished on the next start).\n" +
			"When the key comes from " + envEncryptionKey + ", give the new one in " + envNewEncryptionKey + "\n" +
			"and start the daemon with it afterwards. It refuses to run while a daemon uses the database.",
		Args: cobra.NoArgs,
	}
	flags := config.BindFlags(cmd.Flags(), "server.databasePath")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, warnings, err := config.Load(config.LoadOptions{Flags: flags})
		if err != nil {
			return err
		}
		for _, w := range warnings {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
		}
		if _, err := os.Stat(cfg.Server.DatabasePath); err != nil {
			return fmt.Errorf("database %s: %w", cfg.Server.DatabasePath, err)
		}
		lock, err := store.LockWriter(cfg.Server.DatabasePath, "rotate-key", "")
		if err != nil {
			return err
		}
		defer lock.Release()
		st, err := store.Open(cmd.Context(), store.Options{Path: cfg.Server.DatabasePath, EncryptionKey: os.Getenv(envEncryptionKey)})
		if err != nil {
			return err
		}
		defer st.Close()
		old := st.KeyID()
		id, err := st.RotateKey(cmd.Context(), os.Getenv(envNewEncryptionKey))
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "every secret in %s is now encrypted with key %s (was %s)\n", cfg.Server.DatabasePath, id, old)
		if os.Getenv(envEncryptionKey) != "" {
			fmt.Fprintf(cmd.OutOrStdout(), "start the daemon with %s set to the new key\n", envEncryptionKey)
		}
		return nil
	}
	rootCmd.AddCommand(cmd)
}
