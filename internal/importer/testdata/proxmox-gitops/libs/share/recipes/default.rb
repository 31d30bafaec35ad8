package 'samba'
